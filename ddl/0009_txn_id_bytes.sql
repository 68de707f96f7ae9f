-- 0009: the provider's transaction id compared byte for byte (DESIGN.md 6, 15 "Hardening
-- rules"). Under 0008's utf8mb4_unicode_ci key, 'txn-a1' and 'txn-A1' were one id: the
-- second provider payment got 409/10025 and no row. Ids are printable ASCII (the front
-- refuses anything else), so the column becomes ascii_bin. `db migrate` refuses first,
-- listing them, while a stored id is not printable ASCII or two would become one
-- (sk/txn_guard.h). Idempotent: MODIFY to the same definition is a no-op.
ALTER TABLE tb_payment MODIFY provider_txn_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the provider''s transaction id (idempotency key): printable ASCII, compared byte for byte';
