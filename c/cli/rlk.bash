# SPDX-License-Identifier: BSD-3-Clause
# bash completion for rlk -*- shell-script -*-
# Made by tools/gen-cli.lua from c/cli/commands.lua (the one description of rlk's options):
# do not edit. Installed as share/bash-completion/completions/rlk; needs nothing but bash (the
# bash-completion package loads it on demand, or `source` it). tools/gen-completion makes the
# zsh and fish files from it.

_rlk_commands="scripts functions eval lock fastmulti elect semaphore latch inspect top unlock check fence help"
# The options every command takes, before the command or after it.
_rlk_global="--url --url-file --password-file --keep-env --functions --no-functions --pubsub
             --min-replicas --min-replicas-timeout --verbose --tls --cacert --cacertdir --cert
             --key --key-password-file --sni --insecure"

_rlk()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=""
    local cmd="" i w words=()
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()

    # The command: the first word after rlk that is not an option (or a global option's
    # value); and whether the cursor is past `--` (the command to run).
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [ "$w" = "--" ] && [ -n "$cmd" ]; then
            if [ $((i + 1)) -eq "$COMP_CWORD" ]; then
                mapfile -t COMPREPLY < <(compgen -c -- "$cur")
            else
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            fi
            return 0
        fi
        if [ -z "$cmd" ]; then
            case $w in
                --url|--url-file|--password-file|--pubsub|--min-replicas|--min-replicas-timeout|--cacert|--cacertdir|--cert|--key|--key-password-file|--sni) ((i++)) ;;
                -*) ;;
                *) cmd=$w ;;
            esac
        fi
    done

    # Option values: the command's own options first (rlk eval --key is not the TLS --key).
    case $cmd in
        scripts)
            case $prev in
                --bundle) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return 0 ;;
                --url) return 0 ;;
            esac ;;
        functions)
            case $prev in
                --url) return 0 ;;
            esac ;;
        eval)
            case $prev in
                --key|--arg|--url) return 0 ;;
                --bundle) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return 0 ;;
            esac ;;
        lock)
            case $prev in
                -w|--wait|-E|--conflict-exit-code|-l|--lease|-k|--kill-after|--watchdog-lease|--redlock|--lock-delay|--claim|--name|--url) return 0 ;;
            esac ;;
        fastmulti)
            case $prev in
                -w|--wait|-E|--conflict-exit-code|-l|--lease|-k|--kill-after|--watchdog-lease|--url) return 0 ;;
            esac ;;
        elect)
            case $prev in
                -w|--wait|-E|--conflict-exit-code|-l|--lease|-k|--kill-after|--watchdog-lease|--value|--claim|--count|--timeout|--name|--url) return 0 ;;
            esac ;;
        semaphore)
            case $prev in
                -w|--wait|-E|--conflict-exit-code|-l|--lease|-k|--kill-after|--watchdog-lease|--permits|--take|--name|--url) return 0 ;;
            esac ;;
        latch)
            case $prev in
                -w|--wait|-E|--conflict-exit-code|--name|--url) return 0 ;;
            esac ;;
        inspect)
            case $prev in
                --kind) mapfile -t COMPREPLY < <(compgen -W "reentrant rwlock fair fenced token semaphore psemaphore latch fastmulti" -- "$cur"); return 0 ;;
                --name|--url) return 0 ;;
            esac ;;
        top)
            case $prev in
                --pattern|--interval|--limit|--count|--rate|--url) return 0 ;;
                --sort) mapfile -t COMPREPLY < <(compgen -W "waiters age name" -- "$cur"); return 0 ;;
            esac ;;
        unlock)
            case $prev in
                --kind) mapfile -t COMPREPLY < <(compgen -W "reentrant fair fenced rwlock" -- "$cur"); return 0 ;;
                --name|--url) return 0 ;;
            esac ;;
        check)
            case $prev in
                --name|--user|--url) return 0 ;;
            esac ;;
        fence)
            case $prev in
                --token|--fence|--px|--ex|--url) return 0 ;;
            esac ;;
    esac
    case $prev in
        --url|--min-replicas|--min-replicas-timeout|--sni) return 0 ;;
        --url-file|--password-file|--cacert|--cert|--key|--key-password-file) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return 0 ;;
        --pubsub) mapfile -t COMPREPLY < <(compgen -W "auto global sharded" -- "$cur"); return 0 ;;
        --cacertdir) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return 0 ;;
    esac

    case $cmd in
        "")
            words="$_rlk_commands $_rlk_global -h --help -V --version" ;;
        help)
            words="scripts functions eval lock fastmulti elect semaphore latch inspect top unlock check fence" ;;
        scripts)
            words="list load verify --bundle --json --allow-modified --url --help $_rlk_global" ;;
        functions)
            words="load verify dump --replace --json --server --url --help $_rlk_global" ;;
        eval)
            if [[ $cur != -* ]]; then
                # Script names, from the binary being completed.
                mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" scripts list 2>/dev/null |
                    awk 'NR > 1 {print $1}')" -- "$cur")
                return 0
            fi
            words="--key --arg --raw --no-raw --bundle --url --help $_rlk_global" ;;
        lock)
            words="-w --wait -n --no-wait --hold -E --conflict-exit-code -l --lease -k --kill-after
                   --watchdog-lease --stats --json --read --write --fair --fenced --non-reentrant
                   --spin --all --redlock --lock-delay --claim --name --url -- --help $_rlk_global" ;;
        fastmulti)
            words="-w --wait -n --no-wait --hold -E --conflict-exit-code -l --lease -k --kill-after
                   --watchdog-lease --stats --json --url -- --help $_rlk_global" ;;
        elect)
            words="-w --wait -n --no-wait --hold -E --conflict-exit-code -l --lease -k --kill-after
                   --watchdog-lease --stats --json --value --claim --observe --count --timeout
                   --name --url -- --help $_rlk_global" ;;
        semaphore)
            words="acquired set-permits lease-time release expire clear-expire ttl -w --wait -n
                   --no-wait --hold -E --conflict-exit-code -l --lease -k --kill-after
                   --watchdog-lease --stats --json --permits --take --resize --name --url -- --help $_rlk_global" ;;
        latch)
            words="set count-down await count expire clear-expire ttl -w --wait -E
                   --conflict-exit-code --name --url --help $_rlk_global" ;;
        inspect)
            words="--kind --json --name --url --help $_rlk_global" ;;
        top)
            words="--once --json --pattern --interval --sort --limit --count --rate --url --help $_rlk_global" ;;
        unlock)
            words="-f --force --kind --queue --name --url --help $_rlk_global" ;;
        check)
            words="--json --name --user --url --help $_rlk_global" ;;
        fence)
            if [[ $cur != -* ]] && [ "$prev" = fence ]; then
                mapfile -t COMPREPLY < <(compgen -W "set hset del expire pexpire incrby rpush lpush xadd check" -- "$cur")
                return 0
            fi
            words="--token --fence --px --ex --raw --no-raw --url -- --help $_rlk_global" ;;
        *)
            return 0 ;;
    esac
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    return 0
}

complete -F _rlk rlk
