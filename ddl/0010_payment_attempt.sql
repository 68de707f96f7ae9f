-- 0010: the nonce of the delivery that decided a payment (DESIGN.md 6, 16 "Answers after
-- an unknown COMMIT" (a)). A payment callback whose COMMIT had an unknown outcome calls
-- the tb_payment row of its txn id "ours" only when it carries its own attempt_id (a
-- snowflake id minted per delivery); a row with another attempt_id is another
-- delivery's decision, answered as a repeat from that row. Rows from before this
-- migration: NULL (never anyone's own).
-- Every statement is idempotent on its own (a runner killed half-way re-runs the file).
ALTER TABLE tb_payment ADD COLUMN IF NOT EXISTS attempt_id BIGINT NULL COMMENT 'the deciding delivery''s nonce (snowflake id)' AFTER provider_txn_id;
