-- SPDX-License-Identifier: BSD-3-Clause
-- rlk_fence.sql: the resource-side check of rlk's fencing tokens for PostgreSQL (11+; tested on 15).
-- Installed as share/rlk/sql/rlk_fence.sql (Debian: /usr/share/rlk/sql/rlk_fence.sql, package
-- rlk-scripts). Install once per database, as the role that is to own the schema rlk (it runs in
-- one transaction; run it again to upgrade, including an install made before the schema rlk):
--
--   psql -v ON_ERROR_STOP=1 -f rlk_fence.sql
--   GRANT USAGE ON SCHEMA rlk TO app;  GRANT EXECUTE ON FUNCTION rlk.fence_check(text, bigint) TO app;
--
-- Guard the data: as the owner of each table the token protects, once,
--
--   SELECT rlk.protect('accounts', 'ledger');     -- table accounts, fence ledger
--
-- and then, inside the transaction that does the protected work, before (or among) its writes:
--
--   BEGIN;
--   SELECT rlk.fence_check('ledger', 1700000000000042);   -- the token rlk lock --fenced gave
--   UPDATE accounts SET ... ;
--   COMMIT;
--
-- rlk.fence_check(fence, token) keeps, per fence name, the highest token any committed transaction
-- passed (table rlk.fence). A token equal to the highest passes (the same holder may run several
-- transactions under one acquisition); a higher one passes and becomes the highest when the
-- transaction commits; the function replies the highest token before the call (0 for a new fence).
-- A lower token is refused, and a transaction that had a token refused never commits:
--   outside any savepoint   the call raises SQLSTATE RLKFE, message 'RLK_FENCED <highest>': the
--                           transaction is aborted, every statement of it rolls back.
--   inside a savepoint      (psql ON_ERROR_ROLLBACK, pgjdbc autosave, an ORM's nested transaction,
--                           a plpgsql EXCEPTION block) an error would undo only the savepoint and let
--                           the writes around it commit. So there the call records the refusal,
--                           raises a WARNING (SQLSTATE RLKFE, 'RLK_FENCED <highest>') and returns
--                           the highest (above the token); the transaction's COMMIT then fails with
--                           ERROR RLK_FENCED <highest> (SQLSTATE RLKFE) and rolls everything back.
-- Every call records (fence, token) for its transaction in rlk.fence_xact, whose constraint trigger
-- rlk.fence_recheck (DEFERRABLE INITIALLY DEFERRED, enabled ALWAYS: it fires under every
-- session_replication_role) re-checks each record at COMMIT: a refused token fails the commit, and
-- so does a passed one whose fence row this transaction has since deleted or lowered below the
-- token. The record belongs to the (sub)transaction of the call: a ROLLBACK TO a savepoint taken
-- before the call undoes the call, its record and every write after that savepoint.
--
-- A check that does not run to its end (an ERROR of the check itself: 40001 at REPEATABLE READ or
-- SERIALIZABLE, 55P03 from lock_timeout, 42501 for a role without EXECUTE, 42883 for a misspelt
-- name, a cancel) records nothing, and inside a savepoint its error is undone with the savepoint:
-- only a protected table refuses the writes then. rlk.protect(table, fence) adds to the table (and
-- to its partitions and inheritance children) the constraint trigger rlk_fence_guard (AFTER INSERT
-- OR UPDATE OR DELETE, FOR EACH ROW, DEFERRABLE INITIALLY DEFERRED) and the trigger
-- rlk_fence_guard_truncate (BEFORE TRUNCATE), both enabled ALWAYS. A passing check sets a mark for its fence in the transaction (set_config(..., true): a
-- ROLLBACK TO a savepoint taken before the check, or the end of a plpgsql EXCEPTION block that
-- caught an error after it, undoes the mark with the check); the mark names the transaction, the
-- check's subtransaction (which must still be in progress) and the token, and carries a MAC made
-- with a secret only the schema's owner can read (table rlk.secret), so a caller cannot set one
-- itself, nor replay one from another transaction or after a ROLLBACK TO undid its check. At
-- COMMIT (and PREPARE TRANSACTION) every row written to a protected table needs the mark of its
-- fence, for this transaction: else the COMMIT fails with ERROR RLK_UNCHECKED <fence> (SQLSTATE
-- RLKNC: no passing check survives in the transaction) and the whole transaction rolls back. The
-- fence is still at the mark's token then: the check holds the fence's row lock for as long as its
-- mark lives, and its record fails the COMMIT if this transaction lowered or deleted the row.
-- TRUNCATE is checked when it runs: the check must come before it (and PostgreSQL refuses a
-- TRUNCATE after a row write of the same transaction, SQLSTATE 55006: the row's trigger event is
-- pending). Each row written costs one trigger call at COMMIT (6-11 us measured on 2 shared CPUs).
-- rlk.unprotect(table) removes both triggers; the view rlk.protection lists the protected tables.
--
-- A check that runs in a transaction of its own (autocommit) guards nothing: when its statement
-- began the transaction (transaction_timestamp() = statement_timestamp()) and the client's query
-- text does not begin with BEGIN or START TRANSACTION, the call raises a WARNING (SQLSTATE RLKAC,
-- 'RLK_AUTOCOMMIT <fence>') and goes on. A driver's autocommit through the extended query protocol
-- (Parse/Bind/Execute) is not seen; a protected table refuses the writes of such transactions.
--
-- Concurrency: a call whose token is not already below the committed highest locks the fence's row
-- (INSERT ... ON CONFLICT DO NOTHING, then SELECT ... FOR UPDATE) until its transaction ends, so
-- transactions that pass the same fence run one after the other from the check on:
--   READ COMMITTED   a waiter reads the row as the committed transaction left it: a token below a
--                    newer committed one gets RLK_FENCED.
--   REPEATABLE READ, a waiter whose snapshot predates a committed change of the row (a higher token
--   SERIALIZABLE     recorded, or the fence's first row) gets SQLSTATE 40001 (could not serialize);
--                    retrying it as such transactions must be retried gives RLK_FENCED to a stale
--                    holder and passes a newer one.
-- A holder that stops between its check and its COMMIT keeps the row locked, and every newer
-- holder's check waits for it: set lock_timeout in the callers (SET lock_timeout = '2s': the waiting
-- check fails with SQLSTATE 55P03 instead) and idle_in_transaction_session_timeout to end a session
-- that sits idle inside its transaction (its transaction rolls back and the row is released). A
-- prepared transaction (PREPARE TRANSACTION) that passed a check keeps the row locked until
-- COMMIT PREPARED or ROLLBACK PREPARED, whatever the timeouts: find it in pg_prepared_xacts.
-- Should the fence's row vanish between the INSERT and the lock (deleted by someone else), the call
-- inserts it again, as for a new fence; it never passes without a row.
--
-- Every object is schema-qualified and the functions run with search_path = pg_catalog, pg_temp,
-- so objects of the caller's search_path (a temporary table rlk_fence, say) cannot stand in for
-- the fence. rlk.fence_check and the triggers' functions are SECURITY DEFINER: they run as the
-- owner of the schema rlk, and a caller needs only USAGE on the schema and EXECUTE on
-- rlk.fence_check (revoked from PUBLIC at the first install), not rights on the tables; a writer
-- of a protected table needs no right on rlk at all. rlk.protect runs as its caller, who must own
-- the table. Rows are never deleted by rlk: deleting a fence's row lets any token in (as deleting
-- the fence key in Redis would).
--
-- Versions (COMMENT ON SCHEMA rlk): 1, the function rlk_fence_check and table rlk_fence before the
-- schema rlk; 2, the schema rlk with rlk.fence_check; 3, rlk.protect and the marks.

BEGIN;

CREATE SCHEMA IF NOT EXISTS rlk;

CREATE TABLE IF NOT EXISTS rlk.fence (
    fence   text   PRIMARY KEY,
    highest bigint NOT NULL CHECK (highest >= 0)
);

-- One row per call, inserted and deleted by the call itself: its only use is the AFTER INSERT
-- event that makes rlk.fence_recheck run at COMMIT with the row as NEW (a deferred trigger fetches
-- the row even when its own transaction deleted it). Unlogged: a crash ends every transaction
-- that had rows here.
CREATE UNLOGGED TABLE IF NOT EXISTS rlk.fence_xact (
    fence   text   NOT NULL,
    token   bigint NOT NULL,
    refused bigint            -- the highest that refused token; NULL: the token passed
);

-- The secret of the marks (one row, made at the first install, readable only by the owner of the
-- schema rlk and superusers). A passing check's mark is the setting rlk.mark_<the fence's UTF-8
-- bytes in hex> = '<token>:<subxid>:<MAC>', where subxid is the id (with its epoch) of the
-- (sub)transaction the check ran in and MAC the hex SHA-256 of secret:xid:token:subxid:fence:secret
-- (xid: txid_current(), the top transaction's id; the secret at both ends, so that no message can
-- be extended), so that a caller cannot make one (SET LOCAL) nor carry one to another transaction;
-- the guard also wants txid_status(subxid) = 'in progress', so that a mark set again after a
-- ROLLBACK TO undid its check is refused. rlk.fence_check makes the mark and rlk.fence_guard
-- compares it, each with the same expression.
CREATE TABLE IF NOT EXISTS rlk.secret (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    secret text    NOT NULL
);
REVOKE ALL ON TABLE rlk.secret FROM PUBLIC;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM rlk.secret) THEN
        IF pg_catalog.current_setting('server_version_num')::int >= 130000 THEN
            -- gen_random_uuid() draws from the server's strong random source
            EXECUTE 'INSERT INTO rlk.secret (secret) SELECT gen_random_uuid()::text || gen_random_uuid()::text';
        ELSE
            -- PostgreSQL 11 and 12: no strong random source in SQL without pgcrypto
            INSERT INTO rlk.secret (secret)
                SELECT md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text)
                       || md5(random()::text || txid_current()::text);
        END IF;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION rlk.fence_check(fence text, token bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    prev    bigint;
    refused bigint;
    top     boolean;
    rec     tid;
    k       text;
    sub     bigint;   -- the xid of this call's (sub)transaction, 32 bits, then with its epoch
    xact    bigint;
BEGIN
    IF fence_check.fence IS NULL OR length(fence_check.fence) = 0 OR length(fence_check.fence) > 1024 THEN
        RAISE EXCEPTION 'RLK_BADARG fence must be a name of 1..1024 characters' USING ERRCODE = '22023';
    END IF;
    IF fence_check.token IS NULL OR fence_check.token < 1 THEN
        RAISE EXCEPTION 'RLK_BADTOKEN token must be a positive integer' USING ERRCODE = '22023';
    END IF;
    -- A transaction that began with this statement, unless the query text begins it: autocommit,
    -- where the check guards no other statement (the extended protocol's autocommit is not seen).
    IF statement_timestamp() = transaction_timestamp()
       AND coalesce(current_query(), '') !~* E'^\\s*(begin|start\\s+transaction)\\M' THEN
        RAISE WARNING 'RLK_AUTOCOMMIT %', fence_check.fence USING ERRCODE = 'RLKAC',
            DETAIL = 'rlk.fence_check ran in a transaction of its own (autocommit): it guards no other '
                     'statement.',
            HINT = 'Run it between BEGIN and COMMIT with the writes it guards, and protect their tables '
                   '(rlk.protect).';
    END IF;
    -- Already below the committed highest: refused without taking the row lock (the highest never
    -- goes down), so a refused transaction does not hold up the newer holders.
    SELECT f.highest INTO prev FROM rlk.fence AS f WHERE f.fence = fence_check.fence;
    IF NOT FOUND OR fence_check.token >= prev THEN
        prev := NULL;
        FOR attempt IN 1..3 LOOP
            INSERT INTO rlk.fence AS f (fence, highest) VALUES (fence_check.fence, 0)
                ON CONFLICT ON CONSTRAINT fence_pkey DO NOTHING;
            SELECT f.highest INTO prev FROM rlk.fence AS f WHERE f.fence = fence_check.fence FOR UPDATE;
            EXIT WHEN FOUND;   -- else the row was deleted between the two statements: again
        END LOOP;
        IF prev IS NULL THEN
            RAISE EXCEPTION 'RLK_RETRY fence % was deleted during the check, 3 times', fence_check.fence
                USING ERRCODE = '40001';
        END IF;
    END IF;
    IF fence_check.token < prev THEN
        refused := prev;
    ELSIF fence_check.token > prev THEN
        UPDATE rlk.fence AS f SET highest = fence_check.token WHERE f.fence = fence_check.fence;
    END IF;
    -- The record for COMMIT (after the UPDATE: an early firing must see the new highest). A caller
    -- that made every constraint IMMEDIATE would have it checked now, inside its savepoint.
    SET CONSTRAINTS rlk.fence_recheck DEFERRED;
    INSERT INTO rlk.fence_xact AS x (fence, token, refused)
        VALUES (fence_check.fence, fence_check.token, refused)
        RETURNING x.xmin::text::bigint, x.ctid INTO sub, rec;
    xact := txid_current();
    top := sub = xact % 4294967296;
    DELETE FROM rlk.fence_xact AS x WHERE x.ctid = rec;
    IF refused IS NOT NULL THEN
        -- top: this row's xid is the transaction's own, so no savepoint is open and an error
        -- aborts the whole transaction. Otherwise the record above fails the COMMIT.
        IF top THEN
            RAISE EXCEPTION 'RLK_FENCED %', refused USING ERRCODE = 'RLKFE',
                DETAIL = format('fence %s: token %s is below the highest token accepted, %s',
                                fence_check.fence, fence_check.token, refused);
        END IF;
        RAISE WARNING 'RLK_FENCED %', refused USING ERRCODE = 'RLKFE',
            DETAIL = format('fence %s: token %s is below the highest token accepted, %s; refused '
                            'inside a savepoint: this transaction''s COMMIT will fail',
                            fence_check.fence, fence_check.token, refused);
        RETURN prev;
    END IF;
    -- Passed: the mark that the protected tables' triggers look for. Transaction-local, and undone
    -- with the (sub)transaction of this call; it names that (sub)transaction (its xid with the
    -- epoch: a subtransaction's xid follows its top's, past a wraparound of the 32 bits too), so
    -- that a mark set again after a ROLLBACK TO undid the call is refused as well.
    sub := xact - xact % 4294967296 + sub + CASE WHEN sub < xact % 4294967296 THEN 4294967296 ELSE 0 END;
    SELECT s.secret INTO STRICT k FROM rlk.secret AS s;
    PERFORM set_config('rlk.mark_' || encode(convert_to(fence_check.fence, 'UTF8'), 'hex'),
                       fence_check.token::text || ':' || sub::text || ':' || encode(sha256(convert_to(
                           k || ':' || xact::text || ':' || fence_check.token::text || ':' || sub::text
                           || ':' || fence_check.fence || ':' || k, 'UTF8')), 'hex'), true);
    RETURN prev;
END
$$;

CREATE OR REPLACE FUNCTION rlk.fence_recheck() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cur bigint;
BEGIN
    IF NEW.refused IS NOT NULL THEN
        RAISE EXCEPTION 'RLK_FENCED %', NEW.refused USING ERRCODE = 'RLKFE',
            DETAIL = format('fence %s: token %s was refused in this transaction (highest %s); '
                            'it cannot commit', NEW.fence, NEW.token, NEW.refused);
    END IF;
    SELECT f.highest INTO cur FROM rlk.fence AS f WHERE f.fence = NEW.fence FOR UPDATE;
    IF cur IS NULL OR cur < NEW.token THEN
        RAISE EXCEPTION 'RLK_FENCED %', coalesce(cur, 0) USING ERRCODE = 'RLKFE',
            DETAIL = format('fence %s: token %s passed, but the fence''s row is %s at COMMIT',
                            NEW.fence, NEW.token, coalesce('at ' || cur, 'gone'));
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS fence_recheck ON rlk.fence_xact;
CREATE CONSTRAINT TRIGGER fence_recheck AFTER INSERT ON rlk.fence_xact
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE PROCEDURE rlk.fence_recheck();
-- ALWAYS: also under session_replication_role = replica (migration and sync tools), where an
-- ordinarily enabled trigger does not fire.
ALTER TABLE rlk.fence_xact ENABLE ALWAYS TRIGGER fence_recheck;

-- The trigger of a protected table (rlk.protect): TG_ARGV[0] is the fence. Each row written
-- (deferred to COMMIT or PREPARE TRANSACTION) and each TRUNCATE (when it runs) needs the mark of a
-- passing check of the fence in this transaction. The fence is then still at the mark's token:
-- the check that set the mark locked the fence's row in the same (sub)transaction, so the lock is
-- held for as long as the mark lives (a savepoint rollback that undoes one undoes the other), and
-- that check's own record fails the COMMIT if this transaction deleted or lowered the row.
CREATE OR REPLACE FUNCTION rlk.fence_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    mark  text := current_setting('rlk.mark_' || encode(convert_to(TG_ARGV[0], 'UTF8'), 'hex'), true);
    token text := split_part(mark, ':', 1);
    sub   text := split_part(mark, ':', 2);
    k     text;
BEGIN
    IF mark IS NOT NULL THEN
        SELECT s.secret INTO STRICT k FROM rlk.secret AS s;
        -- the MAC first (then sub is the check's own digits), then the check's (sub)transaction:
        -- still in progress, not rolled back
        IF mark = token || ':' || sub || ':' || encode(sha256(convert_to(
                      k || ':' || txid_current()::text || ':' || token || ':' || sub || ':' || TG_ARGV[0]
                      || ':' || k, 'UTF8')), 'hex')
           AND txid_status(sub::bigint) = 'in progress' THEN
            RETURN NULL;
        END IF;
    END IF;
    RAISE EXCEPTION 'RLK_UNCHECKED %', TG_ARGV[0] USING ERRCODE = 'RLKNC',
        DETAIL = format('table %s is protected by fence %s: no rlk.fence_check(%L, token) passed in this '
                        'transaction (none was made, it raised an error, or a savepoint rollback undid '
                        'it)%s', quote_ident(TG_TABLE_SCHEMA) || '.' || quote_ident(TG_TABLE_NAME),
                        TG_ARGV[0], TG_ARGV[0], CASE WHEN coalesce(mark, '') = '' THEN ''
                        ELSE '; the mark found is not this transaction''s' END),
        HINT = 'Call rlk.fence_check in the transaction of the writes and let it end without an error; '
               'after an error of the check, roll the whole transaction back and retry it.';
END
$$;

-- rlk.protect(table, fence): the table cannot commit a row written, nor be truncated, without a
-- passing check of fence in the same transaction. Run as the table's owner; running it again
-- replaces the table's fence. The table's partitions and inheritance children, at any depth, are
-- protected with it: the row trigger of a partitioned table is PostgreSQL's to clone to every
-- partition, present and future; the TRUNCATE trigger and an inheritance child's row trigger are
-- added to each descendant there is now, so run rlk.protect again after adding one.
CREATE OR REPLACE FUNCTION rlk.protect(tbl regclass, fence text) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    kind "char";
    d    record;
BEGIN
    IF protect.fence IS NULL OR length(protect.fence) = 0 OR length(protect.fence) > 1024 THEN
        RAISE EXCEPTION 'RLK_BADARG fence must be a name of 1..1024 characters' USING ERRCODE = '22023';
    END IF;
    SELECT c.relkind INTO kind FROM pg_class AS c WHERE c.oid = tbl;
    IF kind IS NULL OR kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION 'RLK_BADARG % is not a table', tbl USING ERRCODE = '22023';
    END IF;
    PERFORM rlk.unprotect(tbl);
    -- regclass::text is schema-qualified here (search_path is pg_catalog, pg_temp) and quoted
    FOR d IN WITH RECURSIVE tree(oid, depth) AS (
                 SELECT tbl::oid, 0
                 UNION ALL
                 SELECT i.inhrelid, t.depth + 1 FROM pg_inherits AS i JOIN tree AS t ON i.inhparent = t.oid)
             SELECT t.oid::regclass AS rel, t.depth, c.relkind FROM tree AS t JOIN pg_class AS c ON c.oid = t.oid
             ORDER BY t.depth LOOP
        IF d.depth = 0 OR kind <> 'p' THEN
            EXECUTE format('CREATE CONSTRAINT TRIGGER rlk_fence_guard AFTER INSERT OR UPDATE OR DELETE ON %s '
                           'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE PROCEDURE rlk.fence_guard(%L)',
                           d.rel, protect.fence);
        END IF;
        IF d.relkind IN ('r', 'p') THEN
            EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER rlk_fence_guard', d.rel);
            EXECUTE format('CREATE TRIGGER rlk_fence_guard_truncate BEFORE TRUNCATE ON %s '
                           'FOR EACH STATEMENT EXECUTE PROCEDURE rlk.fence_guard(%L)', d.rel, protect.fence);
            EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER rlk_fence_guard_truncate', d.rel);
        END IF;
    END LOOP;
END
$$;

-- rlk.unprotect(table): removes what rlk.protect added, from the table and its descendants (as
-- their owner).
CREATE OR REPLACE FUNCTION rlk.unprotect(tbl regclass) RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d record;
BEGIN
    -- the root first: dropping a partitioned table's trigger drops its clones on the partitions
    FOR d IN WITH RECURSIVE tree(oid, depth) AS (
                 SELECT tbl::oid, 0
                 UNION ALL
                 SELECT i.inhrelid, t.depth + 1 FROM pg_inherits AS i JOIN tree AS t ON i.inhparent = t.oid)
             SELECT t.oid::regclass AS rel FROM tree AS t ORDER BY t.depth LOOP
        IF EXISTS (SELECT 1 FROM pg_trigger AS g WHERE g.tgrelid = d.rel AND g.tgname = 'rlk_fence_guard') THEN
            EXECUTE format('DROP TRIGGER rlk_fence_guard ON %s', d.rel);
        END IF;
        IF EXISTS (SELECT 1 FROM pg_trigger AS g WHERE g.tgrelid = d.rel
                   AND g.tgname = 'rlk_fence_guard_truncate') THEN
            EXECUTE format('DROP TRIGGER rlk_fence_guard_truncate ON %s', d.rel);
        END IF;
    END LOOP;
END
$$;

-- The protected tables: table, fence, and whether each trigger is enabled ALWAYS (tgenabled 'A';
-- 'O' fires only under session_replication_role origin or local, 'D' never).
CREATE OR REPLACE VIEW rlk.protection AS
    SELECT t.tgrelid::regclass AS "table",
           convert_from(substring(t.tgargs FROM 1 FOR position(E'\\000'::bytea IN t.tgargs) - 1), 'UTF8')
               AS fence,
           t.tgname::text AS "trigger",
           t.tgenabled = 'A' AS always
    FROM pg_catalog.pg_trigger AS t
    WHERE t.tgfoid = 'rlk.fence_guard()'::pg_catalog.regprocedure;
GRANT SELECT ON rlk.protection TO PUBLIC;

-- A new function can be executed by PUBLIC: revoke that once, at the first install (an ACL still
-- NULL), so that a grant made since is kept by a re-install.
DO $$
BEGIN
    IF (SELECT p.proacl IS NULL FROM pg_catalog.pg_proc AS p
        WHERE p.oid = 'rlk.fence_check(text, bigint)'::pg_catalog.regprocedure) THEN
        REVOKE ALL ON FUNCTION rlk.fence_check(text, bigint) FROM PUBLIC;
    END IF;
    REVOKE ALL ON FUNCTION rlk.fence_recheck() FROM PUBLIC;
END
$$;

-- Upgrade of an install made before the schema rlk: the plpgsql function rlk_fence_check(text,
-- bigint) and the table rlk_fence in some schema S. The table's rows move into rlk.fence (the
-- larger highest wins), the roles that could UPDATE it get USAGE on rlk and EXECUTE on
-- rlk.fence_check, the table is dropped (a caller still running the old function then fails
-- instead of recording a token rlk.fence would not see), and S.rlk_fence_check becomes a wrapper
-- of rlk.fence_check, so that existing callers keep working.
DO $$
DECLARE
    s     record;
    g     record;
    moved bigint;
BEGIN
    FOR s IN SELECT n.nspname AS nsp, p.oid AS fn
             FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
             JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
             WHERE p.proname = 'rlk_fence_check' AND n.nspname <> 'rlk' AND l.lanname = 'plpgsql'
               AND p.proargtypes = '25 20'::pg_catalog.oidvector LOOP
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_class AS c
                   WHERE c.relname = 'rlk_fence' AND c.relkind = 'r'
                     AND c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = s.nsp)) THEN
            EXECUTE format('LOCK TABLE %I.rlk_fence IN ACCESS EXCLUSIVE MODE', s.nsp);
            EXECUTE format('INSERT INTO rlk.fence AS f (fence, highest) SELECT o.fence, o.highest '
                           'FROM %I.rlk_fence AS o ON CONFLICT (fence) DO UPDATE '
                           'SET highest = greatest(f.highest, excluded.highest)', s.nsp);
            GET DIAGNOSTICS moved = ROW_COUNT;
            FOR g IN SELECT DISTINCT a.grantee
                     FROM pg_catalog.pg_class AS c,
                          LATERAL pg_catalog.aclexplode(coalesce(c.relacl, pg_catalog.acldefault('r', c.relowner))) AS a
                     WHERE c.relname = 'rlk_fence' AND c.relkind = 'r'
                       AND c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = s.nsp)
                       AND a.privilege_type = 'UPDATE' LOOP
                EXECUTE format('GRANT USAGE ON SCHEMA rlk TO %1$s; '
                               'GRANT EXECUTE ON FUNCTION rlk.fence_check(text, bigint) TO %1$s',
                               CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                                    ELSE quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END);
            END LOOP;
            EXECUTE format('DROP TABLE %I.rlk_fence', s.nsp);
            RAISE NOTICE 'rlk_fence.sql: moved % fence(s) from %.rlk_fence into rlk.fence', moved, s.nsp;
        END IF;
        EXECUTE format('CREATE OR REPLACE FUNCTION %I.rlk_fence_check(fence text, token bigint) '
                       'RETURNS bigint LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp '
                       'AS ''SELECT rlk.fence_check($1, $2)''', s.nsp);
        RAISE NOTICE 'rlk_fence.sql: %.rlk_fence_check now calls rlk.fence_check', s.nsp;
    END LOOP;
END
$$;

COMMENT ON SCHEMA rlk IS 'rlk_fence.sql version 3: rlk.fence_check, rlk.protect';

COMMIT;
