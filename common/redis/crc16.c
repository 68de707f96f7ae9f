/* crc16.c: CRC-16/XMODEM and the Redis Cluster key slot with hash tags (DESIGN.md 4,
 * 4b), bit by bit through a table built once at compile time. The hash-tag rule is the
 * Redis Cluster specification's: the first '{', then the first '}' after it; an empty
 * tag ("{}") means the whole key is hashed. Pure functions, thread-safe. */
#include "sk/crc16.h"

#define P 0x1021u
/* One table entry: 8 shift-and-xor rounds of byte b (CRC-16/XMODEM, MSB first). */
#define R(c) (((c) & 0x8000u) ? (((c) << 1) ^ P) : ((c) << 1))
#define E(b) ((uint16_t)(R(R(R(R(R(R(R(R((unsigned)(b) << 8)))))))) & 0xFFFFu))
#define E4(b) E(b), E((b) + 1), E((b) + 2), E((b) + 3)
#define E16(b) E4(b), E4((b) + 4), E4((b) + 8), E4((b) + 12)
#define E64(b) E16(b), E16((b) + 16), E16((b) + 32), E16((b) + 48)

static const uint16_t table[256] = { E64(0), E64(64), E64(128), E64(192) };

uint16_t sk_crc16(const void *buf, size_t len)
{
        const unsigned char *p = buf;
        uint16_t crc = 0;

        for (size_t i = 0; i < len; i++)
                crc = (uint16_t)((crc << 8) ^ table[((crc >> 8) ^ p[i]) & 0xFFu]);
        return crc;
}

int sk_key_slot(const char *key, size_t len)
{
        size_t s, e;

        for (s = 0; s < len; s++)
                if (key[s] == '{')
                        break;
        if (s < len) {
                for (e = s + 1; e < len; e++)
                        if (key[e] == '}')
                                break;
                if (e < len && e != s + 1)
                        return sk_crc16(key + s + 1, e - s - 1) & (SK_CLUSTER_SLOTS - 1);
        }
        return sk_crc16(key, len) & (SK_CLUSTER_SLOTS - 1);
}
