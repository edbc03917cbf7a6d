/* nvlemu: the 64-bit FNV-1a hash (Fowler, Noll, Vo; offset basis
 * 14695981039346656037, prime 1099511628211: draft-eastlake-fnv,
 * http://www.isthe.com/chongo/tech/comp/fnv/), as every standard FNV-1a
 * tool computes it.  Used for the model hash of a topology (the canonical
 * export), the signature members of a collective agree on, synthetic
 * weights' per-tensor seeds and the tests' bit-equality checks. */
#ifndef NVLEMU_HASH_H
#define NVLEMU_HASH_H

#include <stddef.h>
#include <stdint.h>

#define NVL_FNV1A64_BASIS 0xcbf29ce484222325ull /* 14695981039346656037 */
#define NVL_FNV1A64_PRIME 0x100000001b3ull      /* 1099511628211 */

/* Continues hash h (NVL_FNV1A64_BASIS to start) over len bytes of data. */
uint64_t nvl_fnv1a64_update(uint64_t h, const void *data, size_t len);

/* FNV-1a 64 of len bytes of data: "" -> 0xcbf29ce484222325,
 * "a" -> 0xaf63dc4c8601ec8c, "foobar" -> 0x85944171f73967e8. */
uint64_t nvl_fnv1a64(const void *data, size_t len);

#endif
