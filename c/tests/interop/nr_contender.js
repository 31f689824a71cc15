// SPDX-License-Identifier: BSD-3-Clause
//
// nr_contender.js - one node-redisson contender process for it_node_redisson
// (c/tests/interop). Usage:
//
//   node nr_contender.js PORT NAME LOG WAIT_MS LEASE_MS HOLD_US
//
// Connects a node-redisson client to 127.0.0.1:PORT, says "ready <now_ns>",
// waits for a line "go <deadline_ns>" on stdin, then until deadline_ns:
// lock.tryLock(WAIT_MS, LEASE_MS, ms) -> hold HOLD_US microseconds (busy) ->
// unlock, and says "done <holds> <fails> <errors> <max_wait_ns> <expired>"
// (expired: unlocks refused after the hold outlived LEASE_MS - a stall).
//
// Times are process.hrtime.bigint(): nanoseconds of libuv's uv_hrtime, which is
// clock_gettime(CLOCK_MONOTONIC) on Linux - the clock of the C side's
// tk_mono_ns (the parent checks the "ready" stamp against its own clock).
//
// Hold log (c/tests/support/holdlog.h), one write(2) per line to LOG opened
// O_APPEND: "B pid 0 seq X sent start 0" right after tryLock returned true
// (sent = when tryLock was called: start - sent is the wait), "E pid 0 seq
// end" right before unlock is sent; a failed tryLock (wait ran out) is a
// comment line "# F pid 0 seq sent end" (the checker skips '#' lines; the
// parent reads them for the wait statistics).
'use strict';

const fs = require('fs');
const readline = require('readline');
const { Redisson, TimeUnit } = require('node-redisson');

function main() {
    const [port, name, logPath, waitMs, leaseMs, holdUs] = process.argv.slice(2);
    if (!holdUs) {
        process.stderr.write('usage: nr_contender.js PORT NAME LOG WAIT_MS LEASE_MS HOLD_US\n');
        process.exit(2);
    }
    const fd = fs.openSync(logPath, 'a', 0o600);   // O_APPEND
    const pid = process.pid;
    const now = () => process.hrtime.bigint();
    const line = (s) => fs.writeSync(fd, s + '\n');
    const redisson = new Redisson({
        redis: { options: { host: '127.0.0.1', port: Number(port), connectionName: 'nr_contender' } },
    });
    const lock = redisson.getLock(name);
    const holdNs = BigInt(holdUs) * 1000n;
    let holds = 0, fails = 0, errors = 0, expired = 0, maxWait = 0n, seq = 0;

    const run = async (deadline) => {
        while (now() < deadline) {
            seq++;
            const sent = now();
            let ok = false;
            try {
                ok = await lock.tryLock(Number(waitMs), Number(leaseMs), TimeUnit.MILLISECONDS);
            } catch (e) {
                errors++;
                process.stderr.write(`nr_contender ${pid}: tryLock: ${e}\n`);
                continue;
            }
            const start = now();
            if (start - sent > maxWait)
                maxWait = start - sent;
            if (!ok) {
                fails++;
                line(`# F ${pid} 0 ${seq} ${sent} ${start}`);
                continue;
            }
            holds++;
            line(`B ${pid} 0 ${seq} X ${sent} ${start} 0`);
            while (now() - start < holdNs) {
                // busy: the critical section (no event-loop turn inside the hold)
            }
            line(`E ${pid} 0 ${seq} ${now()}`);
            try {
                await lock.unlock();
            } catch (e) {
                if (now() - start >= BigInt(leaseMs) * 1000000n) {
                    expired++;  // stalled past the lease before the unlock got through
                    continue;
                }
                errors++;
                process.stderr.write(`nr_contender ${pid}: unlock: ${e}\n`);
            }
        }
        process.stdout.write(`done ${holds} ${fails} ${errors} ${maxWait} ${expired}\n`);
        fs.closeSync(fd);
        // node-redisson leaves wait timers and two connections behind: leave now.
        await Promise.race([redisson.quit(), new Promise((r) => setTimeout(r, 500))]);
        process.exit(0);
    };

    redisson.redis.once('ready', () => {
        process.stdout.write(`ready ${now()}\n`);
        const rl = readline.createInterface({ input: process.stdin });
        rl.once('line', (l) => {
            const m = /^go (\d+)$/.exec(l);
            rl.close();
            if (!m) {
                process.stderr.write(`nr_contender ${pid}: expected "go <deadline_ns>", got "${l}"\n`);
                process.exit(2);
            }
            run(BigInt(m[1])).catch((e) => {
                process.stderr.write(`nr_contender ${pid}: ${e}\n`);
                process.exit(3);
            });
        });
    });
    redisson.redis.on('error', (e) => process.stderr.write(`nr_contender ${pid}: redis: ${e}\n`));
}

main();
