# SPDX-License-Identifier: BSD-3-Clause
# bash completion for rlk -*- shell-script -*-
# Installed as share/bash-completion/completions/rlk; needs nothing but bash (the
# bash-completion package loads it on demand, or `source` it). The one source of rlk's
# completion: tools/gen-completion makes the zsh and fish files from it.

_rlk_commands="scripts functions eval lock fastmulti elect semaphore latch inspect top unlock check fence help"

_rlk()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=""
    local cmd="" i w words=()
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()

    # The command: the first word after rlk that is not an option (or --url's value); and
    # whether the cursor is past `--` (lock, semaphore: the command to run).
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
                --url|--pubsub|--min-replicas|--min-replicas-timeout|--url-file|--password-file|--cacert|--cacertdir|--cert|--key|--key-password-file|--sni) ((i++)) ;;
                -*) ;;
                *) cmd=$w ;;
            esac
        fi
    done

    # Option values.
    case $prev in
        --url) return 0 ;;
        --pubsub) mapfile -t COMPREPLY < <(compgen -W "auto global sharded" -- "$cur"); return 0 ;;
        --bundle|--cacertdir) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return 0 ;;
        --cacert|--cert|--key|--key-password-file|--url-file|--password-file)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return 0 ;;
        --sni) return 0 ;;
        --kind)
            [ "$cmd" = unlock ] && { mapfile -t COMPREPLY < <(compgen -W "reentrant fair fenced rwlock" -- "$cur"); return 0; }
            mapfile -t COMPREPLY < <(compgen -W "reentrant rwlock fair fenced token semaphore psemaphore latch fastmulti" -- "$cur")
            return 0 ;;
        --sort) [ "$cmd" = top ] && { mapfile -t COMPREPLY < <(compgen -W "waiters age name" -- "$cur"); return 0; } ;;
        --pattern|--interval|--limit|--count|--rate|--value|--timeout) return 0 ;;
        -w|--wait|-E|--conflict-exit-code|-l|--lease|-k|--kill-after|--watchdog-lease|--permits|--take|--key|--arg|--name|--user|--min-replicas|--min-replicas-timeout|--token|--fence|--px|--ex)
            return 0 ;;
    esac

    case $cmd in
        "")
            words="$_rlk_commands --url --functions --no-functions --pubsub --min-replicas
                   --min-replicas-timeout --tls --cacert --cacertdir --cert --key
                   --key-password-file --sni --insecure --help --version" ;;
        help)
            words=$_rlk_commands ;;
        scripts)
            words="list load verify --bundle --json --url --allow-modified --help" ;;
        functions)
            words="load verify dump --replace --json --server --url --help" ;;
        eval)
            if [[ $cur != -* ]]; then
                # Script names, from the binary being completed.
                mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" scripts list 2>/dev/null |
                    awk 'NR > 1 {print $1}')" -- "$cur")
                return 0
            fi
            words="--key --arg --raw --no-raw --url --bundle --help" ;;
        lock)
            words="--read --write --fair --fenced --all --redlock --non-reentrant --spin -w --wait
                   -n --no-wait --hold -E --conflict-exit-code -l --lease -k --kill-after
                   --watchdog-lease --lock-delay --claim --stats --json --url -- --help" ;;
        fastmulti)
            words="-w --wait -n --no-wait --hold -E --conflict-exit-code -l --lease -k --kill-after
                   --watchdog-lease --stats --json --url -- --help" ;;
        elect)
            words="--value --claim --observe --json --count --timeout -w --wait -n --no-wait --hold -E
                   --conflict-exit-code -l --lease -k --kill-after --watchdog-lease --stats --name
                   --url -- --help" ;;
        semaphore)
            words="--permits --take -w --wait -n --no-wait --hold -E --conflict-exit-code -l --lease
                   acquired set-permits lease-time release expire clear-expire ttl
                   -k --kill-after --watchdog-lease --stats --json --url -- --help" ;;
        latch)
            words="set count-down await count expire clear-expire ttl -w -E --url --help" ;;
        inspect)
            words="--kind --json --url --help" ;;
        top)
            words="--once --json --pattern --interval --sort --limit --count --rate --url --help" ;;
        unlock)
            words="--force --kind --queue --name --url --help" ;;
        check)
            words="--json --name --user --url --help" ;;
        fence)
            if [[ $cur != -* ]] && [ "$COMP_CWORD" -ge 2 ] && [ "$prev" = fence ]; then
                mapfile -t COMPREPLY < <(compgen -W "set hset del expire pexpire incrby rpush lpush xadd check" -- "$cur")
                return 0
            fi
            words="--token --fence --px --ex --raw --no-raw --url -- --help" ;;
        *)
            return 0 ;;
    esac
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    return 0
}

complete -F _rlk rlk
