/* sk/crc16.h: CRC-16/XMODEM and the Redis Cluster key slot (DESIGN.md 4: home bucket;
 * DESIGN.md 4b: slot routing). Pure functions, thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SK_CLUSTER_SLOTS 16384

/** @brief CRC-16/XMODEM (poly 0x1021, init 0, no reflection, no final xor) of
 *  @p len bytes at @p buf (borrowed). "123456789" -> 0x31C3. */
uint16_t sk_crc16(const void *buf, size_t len);

/** @brief Redis Cluster slot (0..16383) of the key @p key of @p len bytes: CRC16 of
 *  the hash tag (the bytes between the first '{' and the first '}' after it, when that
 *  is non-empty) or of the whole key, mod 16384 (the Redis Cluster specification). */
int sk_key_slot(const char *key, size_t len);
