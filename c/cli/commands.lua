-- commands.lua - the one description of the rlk command line: the options every command takes,
-- each command's options and action words, the exit codes, the environment and the installed
-- files.
--
-- tools/gen-cli.lua makes from it: the options, exit codes and environment of `rlk --help`
-- (c/cli/help_gen.c), the bash completion (c/cli/rlk.bash, from which tools/gen-completion makes
-- the zsh and fish ones), the tables of docs/cli.md between its "generated" markers, and the
-- man page's EXIT STATUS, ENVIRONMENT, FILES and SEE ALSO (tools/gen-man, with the paths of the
-- install prefix). `luajit tools/gen-cli.lua` rewrites them all; ctest's cli_docs_fresh says when
-- one is stale. A command's own `rlk CMD --help` text stays in its cmd_*.c; cli_docs
-- (tools/check-cli-docs.lua) checks it, the parser (the binary), the man page, the completion
-- and docs/cli.md against this file: an option, exit code or variable one of them has and
-- another lacks is a failure.
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
    help = "the bash completion; @DATADIR@/zsh/site-functions/_rlk and "
        .. "@DATADIR@/fish/vendor_completions.d/rlk.fish: the zsh and fish ones" },
}

-- SEE ALSO: other pages, then the guides under @DOCDIR@.
M.see_also = { pages = { "redis-server(1)", "redis-cli(1)", "valkey-server(1)" },
               docs = { "README.md", "docs/cli.md (every command and option)", "docs/ops.md",
                        "docs/tls.md", "docs/acl.md", "docs/elect.md" } }

return M
