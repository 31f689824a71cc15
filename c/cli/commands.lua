-- commands.lua - the one description of the rlk command line: the options every command takes,
-- each command's options, action words and help text, the exit codes, the environment and the
-- installed files.
--
-- tools/gen-cli.lua makes from it: `rlk --help`'s options, exit codes and environment and every
-- `rlk CMD --help` (c/cli/help_gen.c and help_gen.h), the bash completion (c/cli/rlk.bash, from
-- which tools/gen-completion makes the zsh and fish ones), the tables of docs/cli.md between its
-- "generated" markers, and the man page's EXIT STATUS, ENVIRONMENT, FILES and SEE ALSO
-- (tools/gen-man, with the paths of the install prefix; its COMMANDS section is each
-- `rlk help CMD`). `luajit tools/gen-cli.lua` rewrites them all; ctest's cli_docs_fresh says when
-- one is stale. cli_docs (tools/check-cli-docs.lua) checks the parser (the binary), its help
-- texts, the man page, the completion and docs/cli.md against this file: an option, exit code or
-- variable one of them has and another lacks is a failure.
--
-- An option: { "-w", "--wait", arg = "SECONDS", value = WHAT } with the short form first (if
-- any); arg is the value's name (none: a flag). value: what the completion offers for the
-- value: "file", "dir", a list of words, or nothing (free text). help (global options): the
-- `rlk --help` and man page text; doc: docs/cli.md's table cell (markdown). Texts are written
-- as one paragraph; the generator wraps them.

local M = {}

-- The options every command takes, before the command or after it (util.c rlk_cli_global_opt;
-- main.c takes --url before the command, every command after it).
M.options = {
  { "--url", arg = "URL",
    help = "redis://[user[:password]@]host[:port][/db], unix:///path[?db=N], "
        .. "redis+cluster://host:port[,...], redis+sentinel://host:port[,...]/MASTER; rediss, "
        .. "rediss+cluster, rediss+sentinel: the same over TLS (default: $RLK_URL, then "
        .. "redis://127.0.0.1:6379); the scheme is case-insensitive",
    doc = "the server ([above](#the-server))" },
  { "--url-file", arg = "FILE", value = "file",
    help = "read the URL from FILE (one line)",
    doc = "the URL, from `FILE`" },
  { "--password-file", arg = "FILE", value = "file",
    help = "the AUTH password, from FILE (one line; not readable by every user); used when "
        .. "the URL has no password, before $RLK_PASSWORD_FILE, $RLK_PASSWORD, then $REDISCLI_AUTH",
    doc = "the AUTH password, from `FILE`, when the URL has none" },
  { "--keep-env",
    help = "pass the credentials on to a command rlk runs: the URL's password, RLK_PASSWORD, "
        .. "REDISCLI_AUTH, RLK_PASSWORD_FILE, RLK_TLS_CERT, RLK_TLS_KEY, RLK_TLS_KEY_PASSWORD_FILE "
        .. "(default: removed; the command gets RLK_URL = the URL rlk uses, without its "
        .. "password, and the TLS options)",
    doc = "pass the credentials on to a command `rlk` runs: the URL's password, `RLK_PASSWORD`, "
        .. "`REDISCLI_AUTH`, and where the password file, client certificate and key are "
        .. "([below](#the-commands-environment))" },
  { "--functions",
    help = "call the scripts as the Redis 7 Functions library rlk (FCALL / FCALL_RO; exit 5 "
        .. "while the server lacks this release's library: rlk functions load). Default: FCALL "
        .. "when the server holds it, else EVALSHA",
    doc = "call the scripts through the Redis 7 Functions library `rlk` (`FCALL` / `FCALL_RO "
        .. "rlk_<kind>_<op>`); exit 5 while the server lacks this release's library "
        .. "([`rlk functions load`](#rlk-functions-load---url-url---replace)). Without it `rlk` "
        .. "does so by itself when the server holds this release's library, else `EVALSHA`" },
  { "--no-functions",
    help = "always EVALSHA (and SCRIPT LOAD on NOSCRIPT)",
    doc = "always `EVALSHA` (and `SCRIPT LOAD` on `NOSCRIPT`), even where the library is loaded" },
  { "--pubsub", arg = "MODE", value = { "auto", "global", "sharded" },
    help = "auto (default; also $RLK_PUBSUB): sharded pub/sub (SPUBLISH/SSUBSCRIBE) on a "
        .. "Redis 7 cluster, else global (PUBLISH/SUBSCRIBE); global or sharded: that one, to "
        .. "match Redisson's shardedSubscriptionMode",
    doc = "how releases are published and waited for: `auto` (the default; `$RLK_PUBSUB` when "
        .. "the option is not given) is sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`) on a Redis 7 "
        .. "cluster and classic (`PUBLISH`/`SUBSCRIBE`) everywhere else; `global` or `sharded` "
        .. "force one, to match the fleet's Redisson `shardedSubscriptionMode` "
        .. "([cluster.md](cluster.md#waiting-pubsub)); another value is exit 2" },
  { "--min-replicas", arg = "N",
    help = "after every write to a lock, WAIT until N replicas acknowledge it, in the same "
        .. "round trip; fewer: exit 10 (an acquisition is released again). Default 0: no WAIT",
    doc = "after every script that writes (acquire, release, renewal), `WAIT N` on the same "
        .. "connection, sent with the script in one round trip; an acquisition fewer than `N` "
        .. "replicas acknowledged is released again and `rlk` exits 10 (`rlk: lock NAME: "
        .. "acquire NAME: only 0 of 1 replica acknowledged within 1000 ms (WAIT); rolled "
        .. "back`); a release is done anyway (a warning); default 0: no `WAIT` "
        .. "([sentinel.md](sentinel.md#replica-acknowledgement-wait))" },
  { "--min-replicas-timeout", arg = "MS",
    help = "how long that WAIT waits (default 1000)",
    doc = "how long that `WAIT` waits, default 1000 (Redisson's `slavesSyncTimeout`); cut to "
        .. "3/4 of the connection's timeout, so that its reply is read" },
  { "--verbose",
    help = "say on stderr where rlk connects (password masked), what TLS verified (protocol, "
        .. "cipher, certificate, days left), and while waiting, who holds the lock (after 1 s, "
        .. "then every 10 s)",
    doc = "on stderr: where `rlk` connects (`rlk: connecting to redis://:***@10.0.0.5:6379/0 "
        .. "(url from $RLK_URL; password from --password-file)`), and while `rlk lock` or "
        .. "`rlk semaphore` waits, how long it has waited and who holds what it waits for — "
        .. "once after 1 s, then every 10 s, and how long the wait took once it ends" },
  -- TLS (util.c rlk_cli_tls_opt; the variables are read by the library: transport.c).
  { "--tls", tls = true,
    help = "TLS for a redis* URL too (as redis-cli --tls); also $RLK_TLS=1",
    doc = "TLS for a `redis://`, `redis+cluster://` or `redis+sentinel://` URL too, as "
        .. "`redis-cli --tls` (`$RLK_TLS=1`)" },
  { "--cacert", arg = "FILE", value = "file", tls = true,
    help = "trust the CAs of FILE (PEM) for the server's certificate (default: the system's "
        .. "store); $RLK_TLS_CACERT",
    doc = "the CAs (PEM) the server's certificate must chain to; default: the system's CA "
        .. "store (`$RLK_TLS_CACERT`)" },
  { "--cacertdir", arg = "DIR", value = "dir", tls = true,
    help = "trust the hashed CA certificates of DIR; $RLK_TLS_CACERTDIR",
    doc = "a directory of hashed CA certificates (`c_rehash`/`openssl rehash`) "
        .. "(`$RLK_TLS_CACERTDIR`)" },
  { "--cert", arg = "FILE", value = "file", tls = true,
    help = "client certificate (PEM), for tls-auth-clients; $RLK_TLS_CERT",
    doc = "client certificate chain (PEM), for a server with `tls-auth-clients yes` "
        .. "(`$RLK_TLS_CERT`)" },
  { "--key", arg = "FILE", value = "file", tls = true,
    help = "its private key (PEM); $RLK_TLS_KEY",
    doc = "its private key (PEM) (`$RLK_TLS_KEY`); an encrypted key needs "
        .. "`--key-password-file` (never a prompt: exit 2)" },
  { "--key-password-file", arg = "FILE", value = "file", tls = true,
    help = "the key's pass phrase (one line); $RLK_TLS_KEY_PASSWORD_FILE",
    doc = "the key's pass phrase, first line of `FILE` (`$RLK_TLS_KEY_PASSWORD_FILE`)" },
  { "--sni", arg = "NAME", tls = true,
    help = "the server name to send and check instead of the URL's host; $RLK_TLS_SNI",
    doc = "the server name sent and checked instead of the URL's host (`$RLK_TLS_SNI`)" },
  { "--insecure", tls = true,
    help = "no certificate or name check (said on stderr); never in production; "
        .. "$RLK_TLS_INSECURE=1",
    doc = "no certificate or name check, said on stderr (`$RLK_TLS_INSECURE=1`): for a first "
        .. "test only" },
}

-- What goes alone (main.c; after a command's name: its help, or the version).
M.alone = { { "-h", "--help" }, { "-V", "--version" } }

-- The options of a command that waits for a lock and runs a command under it (lock_util.c).
local function hold_options(extra)
  local o = {
    { "-w", "--wait", arg = "SECONDS" },
    { "-n", "--no-wait" },
    { "--hold" },
    { "-E", "--conflict-exit-code", arg = "CODE" },
    { "-l", "--lease", arg = "LEASE_MS" },
    { "-k", "--kill-after", arg = "SECONDS" },
    { "--watchdog-lease", arg = "MS" },
    { "--stats" },
    { "--json" },
  }
  for _, x in ipairs(extra) do o[#o + 1] = x end
  return o
end

local kinds_inspect = { "reentrant", "rwlock", "fair", "fenced", "token", "semaphore",
                        "psemaphore", "latch", "fastmulti" }

-- Every command, in the order `rlk --help` lists them (main.c rlk_cli_commands[]). words: the
-- action words the completion offers (where: "first" when only as the first word after the
-- command); script_names: the completion offers `rlk scripts list`'s names; runs: a command
-- after `--`.
M.commands = {
  { name = "scripts", words = { "list", "load", "verify" },
    options = { { "--bundle", arg = "DIR", value = "dir" }, { "--json" },
                { "--allow-modified" }, { "--url", arg = "URL" } } },
  { name = "functions", words = { "load", "verify", "dump" },
    options = { { "--replace" }, { "--json" }, { "--server" }, { "--url", arg = "URL" } } },
  { name = "eval", script_names = true,
    options = { { "--key", arg = "KEY" }, { "--arg", arg = "ARG" }, { "--raw" }, { "--no-raw" },
                { "--bundle", arg = "DIR", value = "dir" }, { "--url", arg = "URL" } } },
  { name = "lock", runs = true,
    options = hold_options {
      { "--read" }, { "--write" }, { "--fair" }, { "--fenced" }, { "--non-reentrant" },
      { "--spin" }, { "--all" }, { "--redlock", arg = "URLS" },
      { "--lock-delay", arg = "MS" }, { "--claim", arg = "FENCE" }, { "--name", arg = "NAME" },
      { "--url", arg = "URL" } } },
  { name = "fastmulti", runs = true,
    options = hold_options { { "--url", arg = "URL" } } },
  { name = "elect", runs = true,
    options = hold_options {
      { "--value", arg = "VALUE" }, { "--claim", arg = "FENCE" }, { "--observe" },
      { "--count", arg = "N" }, { "--timeout", arg = "SECONDS" }, { "--name", arg = "NAME" },
      { "--url", arg = "URL" } } },
  { name = "semaphore", runs = true,
    words = { "acquired", "set-permits", "lease-time", "release", "expire", "clear-expire", "ttl" },
    options = hold_options {
      { "--permits", arg = "N" }, { "--take", arg = "K" }, { "--resize" },
      { "--name", arg = "NAME" }, { "--url", arg = "URL" } } },
  { name = "latch",
    words = { "set", "count-down", "await", "count", "expire", "clear-expire", "ttl" },
    options = { { "-w", "--wait", arg = "SECONDS" }, { "-E", "--conflict-exit-code", arg = "CODE" },
                { "--name", arg = "NAME" }, { "--url", arg = "URL" } } },
  { name = "inspect",
    options = { { "--kind", arg = "KIND", value = kinds_inspect }, { "--json" },
                { "--name", arg = "NAME" }, { "--url", arg = "URL" } } },
  { name = "top",
    options = { { "--once" }, { "--json" }, { "--pattern", arg = "GLOB" },
                { "--interval", arg = "S" }, { "--sort", arg = "ORDER", value = { "waiters", "age", "name" } },
                { "--limit", arg = "N" }, { "--count", arg = "N" }, { "--rate", arg = "N" },
                { "--url", arg = "URL" } } },
  { name = "unlock",
    options = { { "-f", "--force" }, { "--kind", arg = "KIND", value = { "reentrant", "fair", "fenced", "rwlock" } },
                { "--queue" }, { "--name", arg = "NAME" }, { "--url", arg = "URL" } } },
  { name = "check",
    options = { { "--json" }, { "--name", arg = "NAME" }, { "--user", arg = "USER" },
                { "--url", arg = "URL" } } },
  { name = "fence", runs = true, words_first = true,
    words = { "set", "hset", "del", "expire", "pexpire", "incrby", "rpush", "lpush", "xadd", "check" },
    options = { { "--token", arg = "T" }, { "--fence", arg = "FENCE" }, { "--px", arg = "MS" },
                { "--ex", arg = "S" }, { "--raw" }, { "--no-raw" }, { "--url", arg = "URL" } } },
}

-- Each command's own help, `rlk CMD --help` and `rlk help CMD` (and so its section of the man
-- page): made by tools/gen-cli.lua into c/cli/help_gen.c (rlk_cli_help_CMD). usage: the synopsis
-- lines. Then, in order, separated by blank lines: a string is a paragraph (the generator wraps
-- it); { pre = TEXT } is printed as it is (exit codes, examples); any other table is a list of
-- entries { SPEC, TEXT }, TEXT from column col (default 24; a longer SPEC puts it on the next
-- line), or { pre = TEXT } lines printed as they are, after an optional title line and before an optional footer paragraph. Every option of
-- the command (M.commands) must be named by its SPECs or its synopsis, and every option a SPEC
-- names must be the command's or one every command takes: gen-cli.lua refuses to write otherwise.
M.help = {
  scripts = {
    usage = {
      "rlk scripts list   [--bundle DIR] [--json]",
      "rlk scripts load   [--url URL] [--bundle DIR [--allow-modified]]",
      "rlk scripts verify [--url URL] [--bundle DIR [--allow-modified]] [--json]",
    },
    { col = 10,
      { "list", "the scripts (name, version, number of KEYS, SHA-1); no server needed. KEYS 'n' means a variadic number of keys." },
      { "load", "SCRIPT LOAD every script; checks each SHA-1 the server returns." },
      { "verify", "which scripts the server holds (SCRIPT EXISTS by SHA-1); exit 5 when any is missing." },
    },
    { col = 16,
      { "--bundle DIR", "use the bundle directory DIR (manifest.tsv + <name>.lua) instead of the scripts built into rlk; its files are checked against the manifest, and every script against the SHA-1 this release was built with: a changed, added or removed script is named and refused (exit 5)" },
      { "--allow-modified", "load or verify such a bundle anyway (each difference is still named, as a warning)" },
      { "--json", "machine-readable output" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
    },
  },
  functions = {
    usage = {
      "rlk functions load   [--url URL] [--replace]",
      "rlk functions verify [--url URL] [--json]",
      "rlk functions dump   [--url URL --server]",
    },
    [[
The Redis 7 Functions library rlk: one function per script, rlk_<kind>_<op>
(reentrant/acquire -> rlk_reentrant_acquire), built from the scripts of this
release (share/rlk/functions.lua). Functions persist and replicate with the data;
an application user may then be allowed FCALL and not EVAL/EVALSHA (docs/acl.md).]],
    { col = 10,
      { "load", "FUNCTION LOAD the library; a server that holds the same library already is left as it is; another library rlk is replaced only with --replace (else exit 5)." },
      { "verify", "FUNCTION LIST LIBRARYNAME rlk WITHCODE: the library is present and its code is byte for byte this release's (exit 5 when missing or different)." },
      { "dump", "print this release's library (FUNCTION LOAD input: redis-cli -x FUNCTION LOAD < file); --server prints the code the server holds instead." },
    },
    { col = 14,
      { "--replace", "load over another library rlk (FUNCTION LOAD REPLACE)" },
      { "--server", "dump: the server's library code (exit 5 when it has none)" },
      { "--json", "verify: machine-readable output" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
    },
    [[
Lock commands call the library instead of EVALSHA when the server holds this
release's library (automatically), or always with the global --functions.]],
  },
  eval = {
    usage = {
      "rlk eval NAME [--key KEY]... [--arg ARG]... [--url URL] [--bundle DIR]",
      "              [--raw | --no-raw]",
    },
    [[
Calls the script NAME (see 'rlk scripts list') with the given KEYS and ARGV, in the
order given, and prints its reply as redis-cli does: formatted on a terminal, raw
otherwise. A script error goes to stderr (exit 4).]],
    { col = 16,
      { "--key KEY", "append KEY to KEYS (repeatable)" },
      { "--arg ARG", "append ARG to ARGV (repeatable; ARG may start with '-')" },
      { "--raw", "print raw values even on a terminal" },
      { "--no-raw", "print formatted values even when not on a terminal" },
      { "--bundle DIR", "take the script from the bundle directory DIR" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
    },
    [[
token/acquire, token/extend and token/release run as the server's own commands where it
has them (SET IFEQ, DELIFEQ, DELEX: Valkey 9, Redis 8.4), with the scripts' replies;
$RLK_NATIVE=off in the environment runs the scripts instead.]],
    { pre = [[
example: rlk eval reentrant/acquire --key mylock --key '{mylock}:rlk_waiters' \
             --key '{mylock}:rlk_next' --arg 30000 \
             --arg "$(cat /proc/sys/kernel/random/uuid):1" --arg 0]] },
  },
  lock = {
    usage = {
      "rlk lock NAME [OPTIONS] -- COMMAND [ARGS...]",
      "rlk lock --read | --write | --fair | --fenced NAME [OPTIONS] -- COMMAND...",
      "rlk lock --non-reentrant | --spin NAME [OPTIONS] -- COMMAND...",
      "rlk lock --fair --non-reentrant NAME [OPTIONS] -- COMMAND...",
      "rlk lock --all MEMBER... [OPTIONS] -- COMMAND...",
      "rlk lock --redlock URL,URL,URL[,...] NAME [OPTIONS] -- COMMAND...",
    },
    [[
Waits for the lock, runs COMMAND while holding it, releases it when COMMAND ends,
and exits with COMMAND's exit code (128+N when a signal N ended it).]],
    { title = "Kinds of lock (Redisson's layouts; one at a time):", 
      { "(none)", "the reentrant lock NAME (RLock)" },
      { "--read, --write", "a read or the write lock of the read-write lock NAME (RReadWriteLock): many readers or one writer" },
      { "--fair", "the fair lock NAME (RFairLock): first come, first served" },
      { "--fenced", "the fenced lock NAME (RFencedLock): COMMAND gets the fencing token in RLK_FENCE_TOKEN" },
      { "--non-reentrant", "the reentrant lock's data, but its holder asking again is refused (RedissonNonReentrantLock): exit 2 at once; with --fair: the fair lock, its holder refused the same way (RedissonNonReentrantFairLock)" },
      { "--spin", "the reentrant lock NAME, waited for by polling with a back-off of 1 to 128 ms, no SUBSCRIBE (RedissonSpinLock): for servers or proxies without pub/sub" },
      { "--all MEMBER...", "every MEMBER, all or none (RedissonMultiLock); a MEMBER is NAME (on --url) or URL#NAME (URL starting redis:// or unix://)" },
      { "--redlock URLS", "NAME on every server of the comma-separated URLS, held with a majority (RedLock; extended every third of the lease)" },
    },
    { title = "Options:", 
      { "-w, --wait SECONDS", "wait at most this long (fractions allowed); default: forever" },
      { "-n, --no-wait", "one attempt, no waiting" },
      { "--hold", "no COMMAND: hold the lock until Ctrl-C (or SIGTERM, SIGHUP), then release it and exit 0 (as etcdctl lock)" },
      { "-E, --conflict-exit-code CODE", "exit code when the lock stays held by another (default 1)" },
      { "-l, --lease LEASE_MS", "a fixed lease (at least 250): the lock expires LEASE_MS after it was taken; COMMAND gets SIGTERM at LEASE_MS - grace - margin and SIGKILL margin (100 ms + 1 %) before it ends; default: a renewed lease (watchdog; --redlock: extend), renewed every third of it while COMMAND runs" },
      { "-k, --kill-after SECONDS", "when the lock is lost, COMMAND gets SIGTERM, then SIGKILL after this grace period (default 10; at most half a fixed lease, a third of a renewed one, minus the margin: a longer one is shortened, with a warning)" },
      { "--watchdog-lease MS", "the renewed lease (default 30000)" },
      { "--claim FENCE", "--fenced only (repeatable): once the lock is taken, raise the fence key FENCE to this acquisition's token before COMMAND starts, so a stale holder's writes to it are refused from then on, not only after COMMAND's first write; a fence that holds a newer token: the lock is given back, exit 11" },
      { "--lock-delay MS", "the reentrant lock (and --spin) only: when a holder LOSES the lock (its lease runs out; not released), nobody using --lock-delay takes it for MS more (Chubby's and Consul's lock-delay); a release ends it at once. Give every rlk lock on NAME the same MS: others ignore it (docs/locks/reentrant.md)" },
      { "--name NAME", "the lock's name (for a name that starts with '-')" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
      { "--stats", "at exit, one line on stderr: how long rlk waited (from its start), held and renewed (docs/observability.md)" },
      { "--json", "that line as one JSON object (implies --stats)" },
      { "--url-file FILE, --password-file FILE, --keep-env, --verbose", "as in rlk --help: credentials from files, passing them on to COMMAND, and reports on stderr while waiting" },
    },
    [[
COMMAND sees RLK_LOCK_NAME, RLK_LOCK_KIND (lock, read, write, fair, fenced,
nonreentrant, multi, redlock) and RLK_LOCK_OWNER (the holder id; --redlock: the token). An rlk lock run
by COMMAND on the same NAME and kind re-enters the lock (a reader asking for the
write lock, or a --non-reentrant holder for its lock again, is refused at once:
exit 2; --spin shares kind lock with the reentrant lock); a --fenced re-entry
keeps the enclosing RLK_FENCE_TOKEN (no newer token that would fence its parent).]],
    [[
COMMAND runs in a process group of its own and dies with rlk (SIGKILL to the group
if rlk is killed). SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to rlk are passed on to
COMMAND's group. If the
lock is lost while COMMAND runs (its key deleted or expired, renewals failing, a
fixed lease or RedLock's validity running out), COMMAND is stopped as above and rlk
exits 6.]],
    { pre = [[
exit: COMMAND's code; CODE when not acquired; 2 usage; 3 connection; 4 error reply;
      6 lock lost while COMMAND ran; 11 a --claim fence holds a newer token;
      126/127 COMMAND could not be run]] },
    { pre = [[
examples: rlk lock nightly-backup -w 30 -- ./backup.sh --full
          rlk lock --read config -- ./render.sh
          rlk lock --all order:42 redis://10.0.0.2:6379#stock:7 -- ./ship.sh
          rlk lock --redlock redis://a:6379,redis://b:6379,redis://c:6379 job -- ./job]] },
  },
  fastmulti = {
    usage = {
      "rlk fastmulti GROUP VALUE... [-w SECONDS | -n] [-l LEASE_MS] [-E CODE]",
      "              [-k SECONDS] [--watchdog-lease MS] [--url URL]",
      "              -- COMMAND [ARGS...]",
    },
    [[
Waits until every VALUE of the group GROUP is free, takes them all at once, runs
COMMAND while holding them, releases them when COMMAND ends, and exits with
COMMAND's exit code. Redisson's faster MultiLock (getMultiLock(group, values)): the
values of a group are fields of one hash GROUP, taken and released by one script
call, all or none. Two runs whose values overlap exclude each other; runs with
disjoint values of one group hold at once. A VALUE is 1..1024 bytes without ':'
(Redisson's values are hashes of the encoded objects: docs/locks/fastmulti.md).]],
    { 
      { "-w, --wait SECONDS", "wait at most this long (fractions allowed); default: forever" },
      { "-n, --no-wait", "one attempt, no waiting" },
      { "--hold", "no COMMAND: hold the values until Ctrl-C (or SIGTERM, SIGHUP), then release them and exit 0" },
      { "-E, --conflict-exit-code CODE", "exit code when a value is still held by another in time (default 1)" },
      { "-l, --lease LEASE_MS", "a fixed lease (at least 250) instead of a renewed one; COMMAND is stopped before it runs out, as by rlk lock" },
      { "-k, --kill-after SECONDS", "when the hold is lost, COMMAND gets SIGTERM, then SIGKILL after this grace period (default 10; fitted to the lease)" },
      { "--watchdog-lease MS", "the renewed lease (default 30000)" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
      { "--stats", "at exit, one line on stderr: how long rlk waited, held and renewed (docs/observability.md)" },
      { "--json", "that line as one JSON object (implies --stats)" },
      { "--url-file FILE, --password-file FILE, --keep-env, --verbose", "as in rlk --help" },
    },
    [[
COMMAND sees RLK_LOCK_NAME (GROUP), RLK_LOCK_KIND=fastmulti, RLK_LOCK_VALUES (the
values, separated by spaces) and RLK_LOCK_OWNER (the holder id).]],
    { pre = [[
exit: COMMAND's code; CODE when not acquired in time; 2 usage; 3 connection;
      4 error reply; 6 lost while COMMAND ran; 126/127 COMMAND could not be run]] },
    { pre = "example: rlk fastmulti seats row7-12 row7-13 row7-14 -w 10 -- ./book.sh" },
  },
  elect = {
    usage = {
      "rlk elect NAME [--value VALUE] [--claim FENCE]... [OPTIONS] -- COMMAND [ARGS...]",
      "rlk elect NAME --observe [--json] [--count N] [--timeout SECONDS]",
    },
    [[
Leader election on the fenced lock NAME (docs/elect.md). With COMMAND: campaigns
until elected, runs COMMAND only while leader, resigns when it ends, and exits
with COMMAND's exit code. Each leader's term is a fencing token larger than every
term before: pass it to the resource (rlk_fence_check, scripts/fence/).]],
    { title = "Options:", 
      { "--value VALUE", "what the leader proclaims (observers read it; default \"\")" },
      { "--claim FENCE", "(repeatable) once elected, raise the fence key FENCE to the term before COMMAND starts: the old leader's writes to every claimed fence are refused from then on; a fence that holds a newer term: resign, exit 11" },
      { "--observe", "no COMMAND: print the leader now and at every change (\"leader TERM HOLDER VALUE\" or \"none TERM\")" },
      { "--json", "with --observe: one JSON object per line; else as --stats --json" },
      { "--count N", "with --observe: stop after N lines" },
      { "--timeout SECONDS", "with --observe: stop after this long (exit 0)" },
      { "-w, --wait SECONDS", "campaign at most this long (default: forever)" },
      { "-n, --no-wait", "one attempt" },
      { "--hold", "no COMMAND: lead until Ctrl-C (or SIGTERM, SIGHUP), then resign" },
      { "-E, --conflict-exit-code CODE", "exit code when not elected in time (default 1)" },
      { "-l, --lease LEASE_MS", "a fixed lease (at least 250): leadership ends LEASE_MS after the election; default: a renewed lease (watchdog)" },
      { "-k, --kill-after SECONDS", "when leadership is lost, COMMAND gets SIGTERM, then SIGKILL after this grace (as rlk lock -k)" },
      { "--watchdog-lease MS", "the renewed lease (default 30000): a leader that stops renewing is replaced after at most this long" },
      { "--name NAME", "the election's name (for a name that starts with '-')" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
      { "--stats", "at exit, one line on stderr: waited, led, renewals" },
    },
    [[
COMMAND sees RLK_ELECT_NAME, RLK_ELECT_VALUE, RLK_ELECT_TERM (the term: a fencing
token), RLK_LOCK_NAME, RLK_LOCK_OWNER (the holder id) and RLK_FENCE_TOKEN (the
term again, for the fence tools). If leadership is lost while
COMMAND runs, COMMAND is stopped (SIGTERM, SIGKILL after the grace, before the
lease can end) and rlk exits 6.]],
    { pre = [[
exit: COMMAND's code; CODE when not elected in time; 2 usage; 3 connection;
      4 error reply; 6 leadership lost while COMMAND ran; 11 a --claim fence holds
      a newer term; --observe: 0]] },
    { pre = [[
examples: rlk elect scheduler --value "$(hostname)" -- ./run-scheduler
          rlk elect scheduler --observe --json]] },
  },
  semaphore = {
    usage = {
      "rlk semaphore NAME --permits N [--take K] [--resize] [-w SECONDS | -n]",
      "              [-l LEASE_MS] [-E CODE] [-k SECONDS] [--watchdog-lease MS]",
      "              [--url URL] -- COMMAND [ARGS...]",
      "rlk semaphore NAME acquired | set-permits N | lease-time ID | release ID",
      "rlk semaphore NAME expire SECONDS | clear-expire | ttl",
    },
    [[
Waits for a permit of the semaphore NAME, runs COMMAND while holding it, gives it
back when COMMAND ends, and exits with COMMAND's exit code: at most N
commands hold a permit at once. Permits expire (Redisson's permit-expirable
semaphore): rlk renews its permit every third of the lease while COMMAND runs, so
the permit of an rlk that dies comes back by itself within one lease.]],
    { 
      { "--permits N", "the semaphore's number of permits, set when it does not exist yet; an existing semaphore of another size is refused (exit 2). (The old spelling -n N is still taken, with a warning.)" },
      { "--resize", "give an existing semaphore N permits: adds the difference to its count (fewer: the count may go below 0 until enough holders give theirs back)" },
      { "--take K", "hold K permits at once (default 1, at most N and at most the existing semaphore's size)" },
      { "--name NAME", "the semaphore's name (for a name that starts with '-')" },
      { "-w, --wait SECONDS", "wait at most this long (fractions allowed); default: forever" },
      { "-n, --no-wait", "one attempt, no waiting (as for rlk lock)" },
      { "--hold", "no COMMAND: hold the permits until Ctrl-C (or SIGTERM, SIGHUP), then give them back and exit 0" },
      { "-E, --conflict-exit-code CODE", "exit code when no permit is free in time (default 1)" },
      { "-l, --lease LEASE_MS", "a fixed lease (at least 250): the permit expires LEASE_MS after it was taken; COMMAND is stopped before that, as by rlk lock" },
      { "-k, --kill-after SECONDS", "when the permit is lost, COMMAND gets SIGTERM, then SIGKILL after this grace period (default 10; fitted to the lease as for rlk lock)" },
      { "--watchdog-lease MS", "the renewed lease (default 30000)" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
      { "--stats", "at exit, one line on stderr: how long rlk waited (from its start), held and renewed (docs/observability.md)" },
      { "--json", "that line as one JSON object (implies --stats)" },
      { "--url-file FILE, --password-file FILE, --keep-env, --verbose", "as in rlk --help" },
    },
    { title = "Actions (no COMMAND; Redisson's calls of the same name):", 
      { "acquired", "print how many permits are held (expired ones are given back first)" },
      { "set-permits N", "make the size (available + held) N: prints the new count of available permits (below 0 while more than N are held)" },
      { "lease-time ID", "print the ms left of permit ID's lease (-1: none); exit 1 when it is not held" },
      { "release ID", "give permit ID back (tryRelease); exit 1 when it is not held (expired, released or unknown): nothing changed" },
      { "expire SECONDS", "the semaphore (count and permits) vanishes after SECONDS (fractions allowed); exit 1 when there is no semaphore" },
      { "clear-expire", "remove that time to live; exit 1 when there was none" },
      { "ttl", "print the ms the semaphore has left (-1: no time to live, -2: no semaphore)" },
    },
    [[
COMMAND sees RLK_LOCK_NAME, RLK_LOCK_KIND=semaphore and RLK_LOCK_OWNER (its permit
ids, separated by spaces). Signals and a lost permit (it expired or was taken away:
exit 6) are handled as by rlk lock.]],
    { pre = [[
exit: COMMAND's code; CODE when no permit is free in time; 2 usage; 3 connection;
      4 error reply; 6 permit lost while COMMAND ran; 126/127 COMMAND could not be run]] },
    { pre = "example: rlk semaphore encoders --permits 4 -- ffmpeg -i in.mov out.mp4" },
  },
  latch = {
    usage = {
      "rlk latch NAME set COUNT",
      "rlk latch NAME count-down",
      "rlk latch NAME await [-w SECONDS] [-E CODE]",
      "rlk latch NAME count",
      "rlk latch NAME expire SECONDS | clear-expire | ttl",
    },
    [[
The count-down latch NAME (Redisson's RCountDownLatch): `set` arms it with COUNT when
it is open (exit 1 when it is armed already: the count is not changed); `count-down`
lowers the count by one and prints what is left (reaching 0 opens the latch and
wakes every `await`); `await` waits until the count is 0; `count` prints the count
(0: open). `expire` gives an armed latch a time to live: when it runs out the latch
opens (every `await` returns 0), and exit 1 when it is open already; `clear-expire`
removes it (exit 1 when there was none); `ttl` prints the ms left (-1: no time to
live, -2: open).]],
    { 
      { "-w, --wait SECONDS", "await at most this long (fractions allowed); default: forever" },
      { "-E, --conflict-exit-code CODE", "await's exit code when the latch is still armed (default 1)" },
      { "--name NAME", "the latch's name (for a name that starts with '-')" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
    },
    [[
A name that holds a semaphore (rlk semaphore, or one with held permits) is refused
(exit 2): both are an integer in a string key; rlk marks the ones it creates.]],
    { pre = [[
exit: 0 done; 1 (set) armed already, (await) still armed when the wait ran out,
      (expire) open already, (clear-expire) no time to live;
      2 usage or another kind's name; 3 connection; 4 error reply]] },
    { pre = [[
example: rlk latch deploy-ready set 3; ... rlk latch deploy-ready count-down
         rlk latch deploy-ready await -w 600 && ./switch-traffic.sh]] },
  },
  inspect = {
    usage = {
      "rlk inspect NAME [--kind KIND] [--json] [--url URL]",
    },
    [[
Shows what NAME holds, read with plain commands (a snapshot, not a transaction: a
lock that changes meanwhile may show a mix; nothing is changed). A TTL of -1 means
no expiry.]],
    { col = 14,
      { "reentrant", "holders (holder id, reentry count), TTL" },
      { "rwlock", "mode (read/write), holders, readers, the writer, TTL" },
      { "fair", "holder, TTL, the waiters in queue order with their deadlines" },
      { "fenced", "holder, TTL, the last fencing token issued" },
      { "token", "the token (a string lock: RedLock, redis-py, node-redlock), TTL" },
      { "semaphore", "available permits" },
      { "psemaphore", "available permits, the held permits with their expiries" },
      { "latch", "the count (0: open)" },
      { "fastmulti", "a faster-MultiLock group: each value with its holder, count and expiry, the group's TTL" },
      { "none, other no key / a key of another kind (its type)", "" },
    },
    [[
The kind is found from the key's type and the companion keys Redisson uses; a
count-down latch has the layout of a semaphore (one rlk latch armed is marked and
found), so name it: --kind latch; a fair lock held with nobody queued has a reentrant
lock's (one rlk lock --fair holds is marked and found).]],
    [[
A reentrant lock's lock-delay (rlk lock --lock-delay) shows as its key
{NAME}:rlk_delay and PTTL; with no holder, NAME is in its delay: a holder lost it
without releasing it, and rlk lock --lock-delay waits for the PTTL.]],
    { col = 15,
      { "--kind KIND", "read NAME as this kind (one of the words above but none, other)" },
      { "--json", "one JSON object on one line: {\"name\", \"kind\", ...}" },
      { "--name NAME", "the name (for a name that starts with '-')" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
    },
    { pre = [[
exit: 0 held (a lock with a holder, a token lock, a faster-MultiLock value held, a
      semaphore without a permit available, an armed latch); 1 free (no key, no
      holder: a lock in its lock-delay too, a permit available, an open latch);
      2 usage; 3 connection; 4 error reply, or a key that is not a lock (kind other)]] },
  },
  top = {
    usage = {
      "rlk top [--once] [--json] [--pattern GLOB] [--interval SECONDS]",
      "        [--sort waiters|age|name] [--limit N] [--count N] [--rate N] [--url URL]",
    },
    [[
A live view of the server's locks, semaphores and latches, read from the server
alone (rlk's and Redisson's clients alike): holders (holder id, count, mode, TTL),
waiters (rlk's queue and its reservation, the fair queue with deadlines), pub/sub
subscribers per lock (PUBSUB NUMSUB), permits, expirable-permit holders, latch
counts, faster-MultiLock groups (each value's holder in --json). On a cluster,
every master. Keys are found with SCAN (never KEYS), COUNT and calls per second
bounded; nothing is written.]],
    [[
Who waits for whom across names (a waiter that holds one lock and waits for
another): a cycle is shown as DEADLOCK lines above the table, and --json has it
as "waits": {"edges", "cycles"} (docs/deadlock.md).]],
    "In a terminal it refreshes like top: q quits, s changes the order.",
    { col = 18,
      { "--once", "one refresh, printed, then exit" },
      { "--json", "one JSON object per refresh, one line each" },
      { "--pattern GLOB", "lock names to show (SCAN MATCH; default *)" },
      { "--interval S", "seconds between refreshes (default 2)" },
      { "--sort ORDER", "waiters (queued, then subscribers; default), age (held longest first, as seen by this rlk top), name" },
      { "--limit N", "rows shown (default: the terminal's height, 50 otherwise; --json 100); the totals count every lock" },
      { "--count N", "SCAN COUNT (default 1000, 10..10000)" },
      { "--rate N", "SCAN calls per second per node at most (default 1000)" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
    },
  },
  unlock = {
    usage = {
      "rlk unlock --force NAME [--kind KIND] [--queue] [--url URL]",
      "rlk unlock --queue NAME [--url URL]",
    },
    [[
Force-releases the lock NAME whoever holds it (Redisson's forceUnlock): deletes it
and publishes the unlock message so that waiters try at once. Handles reentrant,
read-write, fair and fenced locks (the kind as rlk inspect finds it). Prints
whether a lock was removed; exit 0 either way.
A holder that is still running finds out at once (it listens on the lock's channel;
reentrant, read-write and fenced locks): `rlk lock` sends its command SIGTERM within a
round trip, SIGKILL after its -k grace, and exits 6. A fair lock's holder finds out
at its next renewal (a third of its lease).]],
    [[
Without --force: exit 2. Only a forced unlock is offered here: a normal unlock
must come from the holder (its holder id), which a separate rlk process is not.]],
    [[
A hash of one holder field -> count without a TTL (a lock someone persisted, or
an application's data shaped like one) is refused: exit 4, nothing changed. Name
its kind with --kind to remove it. Any other key that is no lock is refused with
or without --kind.]],
    { col = 14,
      { "-f, --force release whoever holds it", "" },
      { "--kind KIND the lock's kind as you know it: reentrant (also the non-reentrant", "and spin locks), fair, fenced or rwlock; its force unlock then removes a lock's hash without a TTL too (no detection)" },
      { "--queue", "empty a fair lock's queue of waiters (dead ones included); live waiters are woken and queue again. With --force: both" },
      { "--name NAME the name (for a name that starts with '-')", "" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
    },
  },
  check = {
    usage = {
      "rlk check [--url URL] [--json] [--name NAME] [--user USER]",
    },
    { title = [[
Checks a server before it is trusted with locks, and prints one finding per check:]], col = 15,
      { "server", "Redis or Valkey, its version and mode (a Sentinel is an error)" },
      { "family", "Redis, Valkey, KeyDB, Dragonfly or Garnet, from INFO: KeyDB's active replication and Garnet without lua-transaction-mode are errors, Dragonfly without allow-undeclared-keys a warning (rwlock fails)" },
      { "native", "the kinds that work without scripts (SET IFEQ, DELIFEQ, DELEX)" },
      { "transport", "TLS: protocol, cipher, certificate, days until it expires (warning within 30 days, or when not verified; error when expired, for another host or from an unknown CA); plain TCP to a host that is not loopback is a warning (the password and every call cross in clear)" },
      { "role", "master / replica (error) / cluster node; sentinels monitoring it" },
      { "eviction", "maxmemory with a policy that can evict lock keys (error)" },
      { "persistence", "RDB / AOF / none (warning: a restart forgets every lock)" },
      { "scripts", "rlk's scripts present on the server (SCRIPT EXISTS); in functions mode (--functions, or this release's library loaded) the library rlk" },
      { "acl", "what this user may run, per lock kind (ACL DRYRUN: EVALSHA, or FCALL in functions mode); 'unknown' when the user may not ask" },
      { "clock", "the server's TIME against this host's clock, and monotonic" },
      { "latency", "5 PINGs: min / median / max" },
      footer = [[
Levels: ok, info, warning, unknown (could not be checked), error. docs/ops.md
explains each finding and its fix.]],
    },
    { col = 15,
      { "--json", "one JSON object: {\"url\", \"result\", \"errors\", \"warnings\", \"checks\": [...]}" },
      { "--name NAME", "a lock name of your application, for the ACL probe (key and channel patterns); default rlk-check" },
      { "--user USER", "check the ACL permissions of USER (the application's user) rather than of the user rlk check connects as (needs ACL DRYRUN)" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
      { "--functions", "judge the application as calling the Functions library (FCALL): the library instead of the scripts, FCALL instead of EVALSHA in the ACL (the default when the server holds this release's library)" },
      { "and the global options (rlk --help): --url-file, --password-file, --pubsub, ...", "" },
    },
    { pre = "Exit: 0 all ok, 7 warnings or unknowns, 8 errors; 3 connection error." },
  },
  fence = {
    usage = {
      "rlk fence OP [KEY] [ARG]... [--token T] [--fence FENCE] [--px MS | --ex S]",
      "             [--url URL] [--raw | --no-raw]",
    },
    [[
Writes to KEY through the fencing check (scripts/fence/OP): in one script call the
token is compared with the highest the fence accepted, the command runs only when it
is not lower, and the token becomes the fence's highest. Prints the command's reply as
'rlk eval' does. Meant for a command run by 'rlk lock --fenced NAME -- ...'.]],
    { col = 16,
      { pre = [[
  OP KEY ARGS:  set KEY VALUE [EX s | PX ms | KEEPTTL] [NX | XX] [GET]
                hset KEY FIELD VALUE [FIELD VALUE]...
                del KEY
                expire KEY S [NX | XX | GT | LT]     pexpire KEY MS [...]
                incrby KEY INCREMENT
                rpush KEY ELEMENT...                 lpush KEY ELEMENT...
                xadd KEY ID FIELD VALUE [FIELD VALUE]...
                check (no KEY: prints the fence's highest token before the call)]] },
      { "--token T", "the fencing token (default: $RLK_FENCE_TOKEN, set by rlk lock --fenced)" },
      { "--fence FENCE", "the fence key (default: from $RLK_LOCK_NAME, set by rlk lock --fenced: {NAME}:fence, or NAME:fence when NAME has a {hash tag}); KEY must carry the same {hash tag} as the fence" },
      { "--px MS", "set only: the value expires in MS milliseconds (PX MS)" },
      { "--ex S", "set only: the value expires in S seconds (EX S)" },
      { "--raw", "print raw values even on a terminal" },
      { "--no-raw", "print formatted values even when not on a terminal" },
      { "--url URL", "the server (default: $RLK_URL, then redis://127.0.0.1:6379)" },
      { "--", "the words after it are KEY and ARGs even when they start with '--'" },
    },
    [[
A token below the fence's highest is refused and nothing changes: rlk prints
'rlk: fenced: token T is below the highest accepted H' and exits 11.]],
    { pre = "example: rlk lock --fenced ledger -- sh -c 'rlk fence incrby {ledger}:balance 5'" },
  },
}

-- Exit codes (cli.h enum rlk_exit). help: `rlk --help` and the man page; doc: docs/cli.md.
M.exits = {
  { 0, help = "success", doc = "success" },
  { 1, help = "a lock or permit not acquired in time (lock, semaphore, fastmulti, elect; -E "
        .. "changes it); a latch still armed (await) or armed already (set); inspect: NAME is free",
    doc = "a lock or permit was not acquired in time (`lock`, `semaphore`, `fastmulti`, "
        .. "`elect`; `-E` changes it); a latch still armed when `latch await` gave up, or armed "
        .. "already (`latch set`); `inspect`: `NAME` is free (0: held, "
        .. "[below](#rlk-inspect-name---kind-kind---json))" },
  { 2, help = "usage error or bad input: an unknown command or option, a missing value, an "
        .. "empty NAME, a bad URL or an empty $RLK_URL, a missing, empty or world-readable "
        .. "--url-file/--password-file, an unknown script, a bad bundle, a semaphore/latch name "
        .. "of the other kind, a nested rlk lock that would wait for its own parent",
    doc = "usage error or bad input: unknown command or option, missing value, an empty NAME, "
        .. "`-h`/`--help`/`--version` among other words, an `rlk lock` nested in one that holds "
        .. "the same name as another kind (it would wait for its own parent), an `rlk fence` OP "
        .. "unknown or short of words, bad URL or empty `$RLK_URL`, a "
        .. "`--url-file`/`--password-file` that is missing, empty or readable by every user, "
        .. "unknown script name, bad bundle directory; a reader asking for the write lock of "
        .. "its own read-write lock; `rlk semaphore --permits` differing from an existing "
        .. "semaphore (without `--resize`) or a `--take` beyond its size; a semaphore's name "
        .. "given to `rlk latch` or a latch's to `rlk semaphore`; two `--redlock` URLs of one "
        .. "server" },
  { 3, help = "connection, auth or timeout error",
    doc = "connection, auth or timeout error (refused, closed, timed out, wrong password, "
        .. "SELECT refused), or a call whose reply was lost and whose outcome could not be "
        .. "settled before the server went out of reach (`RLK_ERR_UNSETTLED`: nothing is "
        .. "counted as held, and a hold it may have left ends with its lease)" },
  { 4, help = "a script or the server replied an error",
    doc = "a script or the server replied an error (`RLK_BADLEASE ...`, `WRONGTYPE ...`, "
        .. "`BUSY ...`)" },
  { 5, help = "scripts missing or mismatched on the server (scripts load, scripts verify), or a "
        .. "bundle that differs from this release's scripts; the library rlk missing or not this "
        .. "release's (functions verify, --functions)",
    doc = "scripts missing or mismatched on the server (`scripts verify`, `scripts load`); a "
        .. "bundle that differs from the scripts this `rlk` was built with (`--bundle`, without "
        .. "`--allow-modified`); the Functions library missing or not this release's "
        .. "(`functions verify`, `functions load` without `--replace`, any command with "
        .. "`--functions`)" },
  { 6, help = "lock lost while the command ran (rlk lock, rlk fastmulti; rlk semaphore: a "
        .. "permit; rlk elect: the leadership): the command was stopped, or the release found it "
        .. "gone",
    doc = "the lock (or permit, or leadership) was lost while the command ran (`rlk lock`, "
        .. "`rlk semaphore`, `rlk fastmulti`, `rlk elect`): the command was stopped, or the "
        .. "release found it gone after it ended" },
  { 7, help = "rlk check: warnings, or checks it could not make",
    doc = "`rlk check`: warnings, or checks it could not make (`unknown`)" },
  { 8, help = "rlk check: errors (the server is not fit for locks)",
    doc = "`rlk check`: errors — the server is not fit for locks as it is" },
  { 9, help = "the server is a replica (READONLY, MASTERDOWN)",
    doc = "the server is a replica: a plain URL names a replica (`is a replica (of HOST:PORT): "
        .. "it refuses writes`, said before any wait), or the server replied `READONLY` / "
        .. "`MASTERDOWN`; through a `redis+sentinel://` URL only while no sentinel names another "
        .. "master ([sentinel.md](sentinel.md))" },
  { 10, help = "too few replicas acknowledged (--min-replicas), or NOREPLICAS",
    doc = "too few replicas: fewer than `--min-replicas N` acknowledged an acquisition within "
        .. "`--min-replicas-timeout` (it was released again), or the server's own "
        .. "`min-replicas-to-write` refused it (`NOREPLICAS`) "
        .. "([sentinel.md](sentinel.md#replica-acknowledgement-wait))" },
  { 11, help = "rlk fence: the token is below the highest the fence accepted; rlk lock "
        .. "--claim, rlk elect --claim: a claimed fence holds a newer token",
    doc = "`rlk fence`: the token is below the highest the fence accepted (`rlk: fenced: token "
        .. "T is below the highest accepted H`); nothing changed. `rlk lock --fenced --claim`, "
        .. "`rlk elect --claim`: a claimed fence holds a newer token (`rlk: fenced: token T is "
        .. "below the highest accepted H at --claim FENCE: ...`); the lock was given back (the "
        .. "leader resigned) and `COMMAND` did not run" },
}

-- The environment: what rlk reads, and what it sets for a command it runs. names: the
-- variables of one entry; help: `rlk --help` and the man page; doc: docs/cli.md.
M.environment = {
  { "RLK_URL",
    help = "the server when neither --url nor --url-file is given (default "
        .. "redis://127.0.0.1:6379; set but empty: exit 2); a command rlk runs gets the URL rlk "
        .. "uses, without its password",
    doc = "the server when neither `--url` nor `--url-file` is given (set but empty: exit 2); "
        .. "a command `rlk` runs gets the URL `rlk` uses, without its password "
        .. "([below](#the-commands-environment))" },
  { "RLK_PASSWORD_FILE", "RLK_PASSWORD", "REDISCLI_AUTH",
    help = "the AUTH password when the URL has none and no --password-file is given (a file, "
        .. "then the password itself); removed from a command's environment unless --keep-env",
    doc = "the AUTH password when the URL has none and no `--password-file` is given, in this "
        .. "order ([Passwords](#passwords)); not passed on without `--keep-env`" },
  { "RLK_PUBSUB",
    help = "auto, global or sharded, when no --pubsub is given",
    doc = "`auto`, `global` or `sharded`, when no `--pubsub` is given" },
  { "RLK_TLS", "RLK_TLS_CACERT", "RLK_TLS_CACERTDIR", "RLK_TLS_SNI", "RLK_TLS_INSECURE",
    help = "the TLS options when not given on the command line (--tls, --cacert, --cacertdir, "
        .. "--sni, --insecure); a command rlk runs gets those given",
    doc = "`--tls`, `--cacert`, `--cacertdir`, `--sni`, `--insecure` when not given on the "
        .. "command line; a command `rlk` runs gets those given ([tls.md](tls.md))" },
  { "RLK_TLS_CERT", "RLK_TLS_KEY", "RLK_TLS_KEY_PASSWORD_FILE",
    help = "the client certificate, its key and the key's pass phrase file (--cert, --key, "
        .. "--key-password-file) when not given; removed from a command's environment unless "
        .. "--keep-env",
    doc = "`--cert`, `--key`, `--key-password-file` when not given; not passed on without "
        .. "`--keep-env`" },
  { "RLK_NATIVE",
    help = "off (or 0, no): run the token lock's scripts even where the server has SET IFEQ, "
        .. "DELIFEQ or DELEX (rlk eval token/...)",
    doc = "`off` (or `0`, `no`): the token lock's operations run as scripts even where the "
        .. "server has `SET IFEQ`, `DELIFEQ` or `DELEX` (Valkey 9, Redis 8.4)" },
  { "RLK_LOCK_NAME", "RLK_LOCK_KIND", "RLK_LOCK_OWNER",
    help = "set by rlk lock, semaphore, fastmulti and elect for the command they run: the "
        .. "name, the kind (elect: elect) and the holder id; a nested rlk of the same name "
        .. "and kind re-enters with them, of another kind is refused at once; rlk fence finds "
        .. "its fence from RLK_LOCK_NAME",
    doc = "set by `rlk lock`, `rlk semaphore`, `rlk fastmulti` and `rlk elect` for the command "
        .. "they run: the name, the kind (`rlk elect`: `elect`) and the holder id "
        .. "([below](#the-commands-environment)); a nested `rlk` of the same name and kind "
        .. "re-enters with them, of another kind is refused at once; `rlk fence` finds its "
        .. "fence from `RLK_LOCK_NAME`" },
  { "RLK_FENCE_TOKEN",
    help = "set by rlk lock --fenced and rlk elect: the fencing token (the term); rlk fence "
        .. "sends it, a nested rlk lock --fenced re-enters with it",
    doc = "set by `rlk lock --fenced` and `rlk elect`: the fencing token (the term); "
        .. "`rlk fence` sends it, a nested `rlk lock --fenced` re-enters with it" },
  { "RLK_LOCK_VALUES",
    help = "set by rlk fastmulti: the values held, separated by spaces",
    doc = "set by `rlk fastmulti`: the values held, separated by spaces" },
  { "RLK_ELECT_NAME", "RLK_ELECT_VALUE", "RLK_ELECT_TERM",
    help = "set by rlk elect: the election's name, the leader's value and its term",
    doc = "set by `rlk elect`: the election's name, the leader's value and its term" },
}

-- What an installation puts where (c/CMakeLists.txt install()); @DATADIR@ and @DOCDIR@ are the
-- install prefix's share/ and share/doc/rlk.
M.files = {
  { "@DATADIR@/rlk/scripts",
    help = "the script bundle (manifest.tsv and one expanded script per operation) installed "
        .. "with rlk (rlk scripts --bundle)" },
  { "@DATADIR@/rlk/functions.lua",
    help = "the same scripts as the Redis 7 Functions library rlk (FUNCTION LOAD input; rlk "
        .. "functions load loads the copy built into rlk)" },
  { "@DATADIR@/rlk/sql/rlk_fence.sql",
    help = "the fencing-token check for PostgreSQL (docs/locks/fenced.md)" },
  { "@DOCDIR@",
    help = "README.md and docs/*.md: the guides this page and the help texts name (docs/cli.md, "
        .. "...)" },
  { "@DATADIR@/bash-completion/completions/rlk",
    help = "the bash completion; @DATADIR@/zsh/vendor-completions/_rlk (prefix /usr, as "
        .. "Debian's zsh reads them; else @DATADIR@/zsh/site-functions/_rlk) and "
        .. "@DATADIR@/fish/vendor_completions.d/rlk.fish: the zsh and fish ones" },
}

-- SEE ALSO: other pages, then the guides under @DOCDIR@.
M.see_also = { pages = { "redis-server(1)", "redis-cli(1)", "valkey-server(1)" },
               docs = { "README.md", "docs/cli.md (every command and option)", "docs/ops.md",
                        "docs/tls.md", "docs/acl.md", "docs/elect.md" } }

return M
