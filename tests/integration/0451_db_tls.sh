#!/usr/bin/env bash
# 0451_db_tls.sh: TLS to MariaDB through SECKILL_MYSQL_URL (DESIGN.md 15 "Transport"),
# against a MariaDB server of its own: a second mariadbd on a free port with its own
# datadir under the build folder (the shared 127.0.0.1:3306 server is never touched),
# given a test CA and a server certificate for 127.0.0.1 made here with openssl, and
# require_secure_transport=ON (no plain TCP session at all).
#   - ?ssl-ca=CA&ssl-mode=VERIFY_IDENTITY: `seckill-admin db migrate` connects and applies
#     every migration; ssl-ca alone means the same;
#   - the same URL with another CA (a certificate the server's chain does not end in):
#     refused, the error names the TLS failure, nothing applied; so does a plain URL (the
#     server requires TLS: before, the URL had no way to ask for it); ssl-mode=REQUIRED
#     without a CA connects (encrypted, the server not verified: why VERIFY_IDENTITY is
#     the mode to use);
#   - bad URLs refused at start (exit 2): ssl-mode=VERIFY_CA, VERIFY_IDENTITY without
#     ssl-ca, ssl-cert without ssl-key, an unknown mode.
. "$(dirname "$0")/../support/ft.sh"
ft_init db_tls
command -v openssl >/dev/null || ft_die "openssl not installed"
[[ -x /usr/sbin/mariadbd ]] || ft_die "no /usr/sbin/mariadbd"

D=$FT_BUILD/tests/db_tls.$$
rm -rf "$D"
mkdir -p "$D/pki" "$D/data"
TLS_PID=
tls_down() {
        [[ -n $TLS_PID ]] && kill "$TLS_PID" 2>/dev/null && wait "$TLS_PID" 2>/dev/null
        rm -rf "$D"
}
FT_CLEANUP_HOOKS+=(tls_down)

# ---- a test CA, a server certificate for 127.0.0.1 signed by it, and a CA that signed nothing
pki() { openssl "$@" >>"$D/pki/openssl.log" 2>&1 || ft_die "openssl $1 failed: $(tail -n 5 "$D/pki/openssl.log")"; }
pki req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=seckill test CA" \
        -keyout "$D/pki/ca.key" -out "$D/pki/ca.pem"
pki req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=some other CA" \
        -keyout "$D/pki/other.key" -out "$D/pki/other.pem"
pki req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$D/pki/server.key" -out "$D/pki/server.csr"
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$D/pki/san.ext"
pki x509 -req -in "$D/pki/server.csr" -CA "$D/pki/ca.pem" -CAkey "$D/pki/ca.key" -CAcreateserial \
        -days 2 -extfile "$D/pki/san.ext" -out "$D/pki/server.pem"

# ---- the private server
mysql_install_db --no-defaults --user=root --datadir="$D/data" --auth-root-authentication-method=normal \
        --skip-test-db >"$D/install.log" 2>&1 || ft_die "mysql_install_db: $(tail -n 10 "$D/install.log")"
PORT=$(ft_free_port)
SOCK=$D/mysqld.sock
/usr/sbin/mariadbd --no-defaults --user=root --datadir="$D/data" --port="$PORT" --bind-address=127.0.0.1 \
        --socket="$SOCK" --pid-file="$D/mariadbd.pid" --skip-log-bin --innodb-buffer-pool-size=16M \
        --ssl-ca="$D/pki/ca.pem" --ssl-cert="$D/pki/server.pem" --ssl-key="$D/pki/server.key" \
        --require-secure-transport=ON >"$D/mariadbd.log" 2>&1 &
TLS_PID=$!
up=0
for ((i = 0; i < 600; i++)); do
        kill -0 "$TLS_PID" 2>/dev/null || ft_die "mariadbd exited: $(tail -n 20 "$D/mariadbd.log")"
        mysqladmin --no-defaults --socket="$SOCK" -uroot ping >/dev/null 2>&1 && { up=1; break; }
        sleep 0.1
done
((up)) || ft_die "mariadbd not answering in 60 s: $(tail -n 20 "$D/mariadbd.log")"
ft_log "private mariadbd (pid $TLS_PID) on 127.0.0.1:$PORT with TLS required"
PW=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
mysql --no-defaults --socket="$SOCK" -uroot -e "CREATE DATABASE sk_tls;
        CREATE USER 'sk'@'127.0.0.1' IDENTIFIED BY '$PW' REQUIRE SSL;
        GRANT ALL ON sk_tls.* TO 'sk'@'127.0.0.1'" || ft_die "cannot create the test user"
ft_eq "$(mysql --no-defaults --socket="$SOCK" -uroot -N -e "SELECT @@have_ssl, @@require_secure_transport")" \
        "$(printf 'YES\t1')" "the private server has TLS and requires it"

BASE="mysql://sk:$PW@127.0.0.1:$PORT/sk_tls"
migrate() {     # URL: exit status of `db migrate`; its output in $D/out
        SECKILL_MYSQL_URL=$1 timeout 120 "$FT_BIN/seckill-admin" db migrate >"$D/out" 2>&1
}
applied() { mysql --no-defaults --socket="$SOCK" -uroot -N -e "SELECT COUNT(*) FROM sk_tls.schema_migrations" 2>/dev/null || echo 0; }
tls_error() {   # LABEL: the last run failed with a TLS error
        grep -qiE 'ssl|tls|certificate' "$D/out" && ft_ok "$1: the error names TLS ($(grep -m1 -ioE '[^"]*(ssl|tls|certificate)[^"]*' "$D/out" | cut -c1-120))" ||
                ft_fail "$1: $(tail -n 3 "$D/out")"
}

migrate "$BASE?ssl-ca=$D/pki/other.pem&ssl-mode=VERIFY_IDENTITY"
rc=$?
((rc != 0)) && ft_ok "VERIFY_IDENTITY with another CA: refused (exit $rc)" || ft_fail "VERIFY_IDENTITY with another CA connected"
tls_error "VERIFY_IDENTITY with another CA"
migrate "$BASE"
rc=$?
((rc != 0)) && ft_ok "a plain URL: refused by the server (exit $rc)" || ft_fail "a plain URL connected to a TLS-only server"
ft_eq "$(applied)" 0 "nothing applied by the refused connections"

migrate "$BASE?ssl-ca=$D/pki/ca.pem&ssl-mode=VERIFY_IDENTITY"
ft_eq "$?" 0 "VERIFY_IDENTITY with the server's CA: db migrate exit 0"
grep -q '^applied [1-9][0-9]* migration(s)$' "$D/out" && ft_ok "$(cat "$D/out")" || ft_fail "migrate: $(cat "$D/out")"
ft_eq "$(applied)" "$(ls "$FT_SRC"/ddl/*.sql | wc -l)" "every migration recorded through the verified TLS session"
migrate "$BASE?ssl-ca=$D/pki/ca.pem"
ft_eq "$?" 0 "ssl-ca alone (VERIFY_IDENTITY): exit 0"
ft_eq "$(cat "$D/out")" "applied 0 migration(s)" "second migrate: nothing left"
migrate "$BASE?ssl-mode=REQUIRED"
ft_eq "$?" 0 "ssl-mode=REQUIRED without a CA connects to the TLS-only server (encrypted, nothing verified)"

# Bad TLS options: exit 2 before any connection, the line naming the rule.
bad_url() {     # QUERY WANT_TEXT
        migrate "$BASE?$1"
        ft_eq "$?" 2 "?$1: exit 2"
        grep -qF -- "$2" "$D/out" && ft_ok "it says: $2" || ft_fail "?$1: $(cat "$D/out")"
}
bad_url "ssl-mode=VERIFY_CA&ssl-ca=$D/pki/ca.pem" "ssl-mode must be REQUIRED or VERIFY_IDENTITY"
bad_url "ssl-mode=VERIFY_IDENTITY" "ssl-mode=VERIFY_IDENTITY needs ssl-ca=PATH"
bad_url "ssl-cert=$D/pki/server.pem" "ssl-cert and ssl-key go together"
bad_url "ssl-mode=verify_identity&ssl-ca=$D/pki/ca.pem" "ssl-mode must be REQUIRED or VERIFY_IDENTITY"
ft_finish
