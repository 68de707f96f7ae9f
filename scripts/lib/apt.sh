# scripts/lib/apt.sh: installing Debian packages, for the project's shell scripts (sourced,
# not run): scripts/test.sh, scripts/stack.sh, scripts/demo/install.sh and bench/lib.sh
# each decide which packages they miss and install them through sk_apt_install.

SK_APT_UPDATED=${SK_APT_UPDATED:-0}

# sk_apt_missing PKG...: prints, one a line, the packages that are not installed. The
# status must read "install ok installed": `dpkg -s` also succeeds for a package removed
# with its configuration files left ("deinstall ok config-files"), whose programs are gone.
sk_apt_missing() {
        local p
        for p in "$@"; do
                [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] ||
                        printf '%s\n' "$p"
        done
}

# _sk_apt LOG SUDO ARG...: one apt-get call; stdout (and stderr) appended to LOG, or
# stdout dropped and stderr left to the caller's when LOG is empty.
_sk_apt() {
        local log=$1 sudo=$2
        shift 2
        # env inside sudo: sudo resets the environment
        if [[ -n $log ]]; then
                $sudo env DEBIAN_FRONTEND=noninteractive apt-get "$@" </dev/null >>"$log" 2>&1
        else
                $sudo env DEBIAN_FRONTEND=noninteractive apt-get "$@" </dev/null >/dev/null
        fi
}

# sk_apt_install LOG PKG...: installs PKG... non-interactively with apt-get (one
# `apt-get update` per shell, then `install -y -q --no-install-recommends`), as root or
# through sudo, stdin from /dev/null. apt-get's output is appended to LOG; with LOG empty
# its stdout is dropped and its stderr shown. Returns 0, or 1 with the reason on stderr:
# no apt-get, neither root nor sudo, or apt-get failed (then the last 20 lines of LOG).
sk_apt_install() {
        local log=$1 sudo=""
        shift
        [[ $# -gt 0 ]] || return 0
        if ! command -v apt-get >/dev/null 2>&1; then
                echo "missing packages $* and no apt-get: install them by hand" >&2
                return 1
        fi
        if [[ $(id -u) -ne 0 ]]; then
                if ! command -v sudo >/dev/null 2>&1; then
                        echo "missing packages $*: run as root or install sudo" >&2
                        return 1
                fi
                sudo=sudo
        fi
        if [[ $SK_APT_UPDATED -eq 0 ]]; then
                if ! _sk_apt "$log" "$sudo" update -q; then
                        echo "apt-get update failed" >&2
                        [[ -n $log ]] && tail -n 20 "$log" >&2
                        return 1
                fi
                SK_APT_UPDATED=1
        fi
        if ! _sk_apt "$log" "$sudo" install -y -q --no-install-recommends "$@"; then
                echo "apt-get install $* failed" >&2
                [[ -n $log ]] && tail -n 20 "$log" >&2
                return 1
        fi
}
