-- SPDX-License-Identifier: BSD-3-Clause
-- rlk_fence_0.sql: sql/rlk_fence.sql as released before the rlk schema (a test fixture: the install that
-- sql/rlk_fence.sql must upgrade, and the control its savepoint, search_path and vanished-row cases
-- must fail on; see c/tests/fence/pg_fence.c). Kept byte for byte otherwise; do not install it.
-- Install once per database (idempotent: run it again to upgrade):
--
--   psql -v ON_ERROR_STOP=1 -f rlk_fence.sql
--
-- Use, inside the transaction that does the protected work, before (or among) its writes:
--
--   BEGIN;
--   SELECT rlk_fence_check('ledger', 1700000000000042);   -- the token rlk lock --fenced gave
--   UPDATE accounts SET ... ;
--   COMMIT;
--
-- rlk_fence_check(fence, token) keeps, per fence name, the highest token any committed transaction
-- passed, and raises an error (SQLSTATE RLKFE, message 'RLK_FENCED <highest>') when token is lower:
-- the caller's transaction is then aborted and its other statements roll back with it. A token equal
-- to the highest passes (the same holder may run several transactions under one acquisition); a
-- higher one passes and becomes the highest when the transaction commits. The function replies the
-- highest token before the call (0 for a new fence).
--
-- Concurrency: the fence's row is locked (INSERT ... ON CONFLICT DO NOTHING, then SELECT ... FOR
-- UPDATE) until the caller's transaction ends, so transactions that check the same fence run one
-- after the other from the check on:
--   READ COMMITTED   a waiter reads the row as the committed transaction left it: a token below a
--                    newer committed one gets RLK_FENCED.
--   REPEATABLE READ, a waiter whose snapshot predates a committed change of the row (a higher token
--   SERIALIZABLE     recorded, or the fence's first row) gets SQLSTATE 40001 (could not serialize);
--                    retrying it as such transactions must be retried gives RLK_FENCED to a stale
--                    holder and passes a newer one.
-- Either way a stale transaction never commits. Call the check before reading what the token
-- protects if the reads must be fenced too (under READ COMMITTED later statements see the newer
-- commits; under REPEATABLE READ the snapshot is taken by the transaction's first statement).
--
-- Rows are never deleted by rlk: deleting a fence's row lets any token in again (as deleting the
-- fence key in Redis would). Grant EXECUTE on the function and SELECT, INSERT, UPDATE on the table
-- to the roles that call it, or make it SECURITY DEFINER in your own schema.

CREATE TABLE IF NOT EXISTS rlk_fence (
    fence   text   PRIMARY KEY,
    highest bigint NOT NULL CHECK (highest >= 0)
);

CREATE OR REPLACE FUNCTION rlk_fence_check(fence text, token bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    prev bigint;
BEGIN
    IF fence IS NULL OR length(fence) = 0 OR length(fence) > 1024 THEN
        RAISE EXCEPTION 'RLK_BADARG fence must be a name of 1..1024 characters' USING ERRCODE = '22023';
    END IF;
    IF token IS NULL OR token < 1 THEN
        RAISE EXCEPTION 'RLK_BADTOKEN token must be a positive integer' USING ERRCODE = '22023';
    END IF;
    INSERT INTO rlk_fence AS f (fence, highest) VALUES (rlk_fence_check.fence, 0)
        ON CONFLICT ON CONSTRAINT rlk_fence_pkey DO NOTHING;
    SELECT f.highest INTO prev FROM rlk_fence AS f WHERE f.fence = rlk_fence_check.fence FOR UPDATE;
    IF token < prev THEN
        RAISE EXCEPTION 'RLK_FENCED %', prev USING ERRCODE = 'RLKFE',
            DETAIL = format('fence %s: token %s is below the highest token accepted, %s', fence, token, prev);
    END IF;
    IF token > prev THEN
        UPDATE rlk_fence AS f SET highest = token WHERE f.fence = rlk_fence_check.fence;
    END IF;
    RETURN prev;
END
$$;
