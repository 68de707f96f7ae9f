# scripts/demo/install.sh: step 1 of the demo, sourced by run.sh (which defines say, die
# and RUN, and sources scripts/lib/apt.sh): install_missing installs the Debian packages
# the demo needs that are not there (sk_apt_install, only the missing ones; log in
# $RUN/apt.log).

# Debian package -> a file or command that proves it is there (dpkg -s is the check;
# the probe avoids asking apt when another distribution's package provides it).
install_missing() {
        local -a want=(
                build-essential:gcc build-essential:make cmake:cmake pkg-config:pkg-config
                librdkafka-dev:/usr/include/librdkafka/rdkafka.h
                libhiredis-dev:/usr/include/hiredis/hiredis.h
                default-libmysqlclient-dev:/usr/include/mysql/mysql.h
                libcjson-dev:/usr/include/cjson/cJSON.h
                libmicrohttpd-dev:/usr/include/microhttpd.h
                libssl-dev:/usr/include/openssl/evp.h
                check:/usr/include/check.h
                wrk:wrk gnuplot-nox:gnuplot jq:jq curl:curl python3:python3
                redis-tools:redis-cli mariadb-client:mariadb
        )
        local -a missing=()
        local item pkg probe
        for item in "${want[@]}"; do
                pkg=${item%%:*}
                probe=${item#*:}
                if [[ $probe = /* ]]; then
                        [[ -e $probe ]] && continue
                else
                        command -v "$probe" >/dev/null 2>&1 && continue
                fi
                [[ $probe = /* && -z $(sk_apt_missing "$pkg") ]] && continue
                missing+=("$pkg")
        done
        [[ ${#missing[@]} -gt 0 ]] && mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
        if [[ ${#missing[@]} -eq 0 ]]; then
                say "packages: all present"
                return 0
        fi
        say "installing: ${missing[*]} (log: $RUN/apt.log)"
        sk_apt_install "$RUN/apt.log" "${missing[@]}" || die "cannot install ${missing[*]}"
}
