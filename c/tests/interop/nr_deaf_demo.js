// SPDX-License-Identifier: BSD-3-Clause
//
// nr_deaf_demo.js - node-redisson 1.0.4 on its own (no rlk): a waiter misses
// an unlock and its tryLock gives up although the lock is free. Shows the
// defect that it_node_redisson's node-redisson bound allows for
// (docs/compat.md, "Tested with node-redisson"). Usage, from the npm dir the
// test installs (<build>/c/tests/interop/npm), a redis-server on PORT:
//
//   node nr_deaf_demo.js PORT
//
// waitSubscribeOnce never clears its timer: when a wait ends by a message,
// its timer still fires later and UNSUBSCRIBEs the channel - under a later
// wait of the same client, which then hears nothing; and a wait that times
// out on the lock's TTL (shorter than the wait time left) makes tryLock
// return false instead of retrying.
'use strict';

const { Redisson, TimeUnit } = require('node-redisson');
const Redis = require('ioredis');

const port = Number(process.argv[2] || 6379);
const ch = 'redisson_lock__channel:{nr:deaf}';
const r = new Redis({ port });
const t0 = Date.now();
const say = (...a) => console.log(String(Date.now() - t0).padStart(5), 'ms', ...a);

(async () => {
    const rs = new Redisson({ redis: { options: { port } } });
    const lock = rs.getLock('nr:deaf');
    // wait 1: held by "other" for 2000 ms, released (DEL + PUBLISH 0) at 200 ms
    await r.del('nr:deaf');
    await r.hset('nr:deaf', 'other', 1);
    await r.pexpire('nr:deaf', 2000);
    setTimeout(async () => { await r.del('nr:deaf'); await r.publish(ch, '0'); }, 200);
    const ok1 = await lock.tryLock(10000, 5000, TimeUnit.MILLISECONDS);
    say('wait 1 (lock TTL 2000 ms, freed at 200 ms) ->', ok1);
    await lock.unlock();
    // wait 2: held for 5000 ms, released at 2600 ms (after wait 1's stale 2000 ms timer)
    await r.hset('nr:deaf', 'other', 1);
    await r.pexpire('nr:deaf', 5000);
    setTimeout(async () => {
        say('subscribers of the channel before the release:', (await r.pubsub('NUMSUB', ch))[1]);
        await r.del('nr:deaf');
        say('lock freed, PUBLISH 0 reached', await r.publish(ch, '0'), 'subscribers');
    }, 2600);
    const ok2 = await lock.tryLock(10000, 5000, TimeUnit.MILLISECONDS);
    say('wait 2 (tryLock wait 10000 ms) ->', ok2, '; lock exists:', await r.exists('nr:deaf'));
    process.exit(0);
})();
