-- SPDX-License-Identifier: BSD-3-Clause
-- rlk_fence_2.sql: sql/rlk_fence.sql version 2 (the schema rlk, before rlk.protect), a test fixture:
-- the install that c/tests/fence/pg_guard.c upgrades. Byte for byte the release from the next line on;
-- do not install it.
-- rlk_fence.sql: the resource-side check of rlk's fencing tokens for PostgreSQL (9.5+; tested on 15).
-- Installed as share/rlk/sql/rlk_fence.sql (Debian: /usr/share/rlk/sql/rlk_fence.sql, package
-- rlk-scripts). Install once per database, as the role that is to own the schema rlk (it runs in
-- one transaction; run it again to upgrade, including an install made before the schema rlk):
--
--   psql -v ON_ERROR_STOP=1 -f rlk_fence.sql
--   GRANT USAGE ON SCHEMA rlk TO app;  GRANT EXECUTE ON FUNCTION rlk.fence_check(text, bigint) TO app;
--
-- Use, inside the transaction that does the protected work, before (or among) its writes:
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
-- rlk.fence_recheck (DEFERRABLE INITIALLY DEFERRED) re-checks each record at COMMIT: a refused
-- token fails the commit, and so does a passed one whose fence row this transaction has since
-- deleted or lowered below the token. The record belongs to the (sub)transaction of the call: a
-- ROLLBACK TO a savepoint taken before the call undoes the call, its record and every write after
-- that savepoint, as if the check had never been made.
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
-- that sits idle inside its transaction (its transaction rolls back and the row is released).
-- Should the fence's row vanish between the INSERT and the lock (deleted by someone else), the call
-- inserts it again, as for a new fence; it never passes without a row.
--
-- Every object is schema-qualified and both functions run with search_path = pg_catalog, pg_temp,
-- so objects of the caller's search_path (a temporary table rlk_fence, say) cannot stand in for
-- the fence. The functions are SECURITY DEFINER: they run as the owner of the schema rlk, and a
-- caller needs only USAGE on the schema and EXECUTE on rlk.fence_check (revoked from PUBLIC at the
-- first install), not rights on the tables. Rows are never deleted by rlk: deleting a fence's row
-- lets any token in (as deleting the fence key in Redis would).

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

CREATE OR REPLACE FUNCTION rlk.fence_check(fence text, token bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    prev    bigint;
    refused bigint;
    top     boolean;
    rec     tid;
BEGIN
    IF fence_check.fence IS NULL OR length(fence_check.fence) = 0 OR length(fence_check.fence) > 1024 THEN
        RAISE EXCEPTION 'RLK_BADARG fence must be a name of 1..1024 characters' USING ERRCODE = '22023';
    END IF;
    IF fence_check.token IS NULL OR fence_check.token < 1 THEN
        RAISE EXCEPTION 'RLK_BADTOKEN token must be a positive integer' USING ERRCODE = '22023';
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
        RETURNING x.xmin::text::bigint = txid_current() % 4294967296, x.ctid INTO top, rec;
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
    END IF;
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

COMMIT;
