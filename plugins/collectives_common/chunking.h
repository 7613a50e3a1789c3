// How all_reduce splits `count` elements among `g` members: member p owns
// [floor(p*count/g), floor((p+1)*count/g)). Works for any count, including counts smaller
// than g (some chunks are then empty) and counts not divisible by g.
#ifndef PLEXUS_COLLECTIVES_COMMON_CHUNKING_H
#define PLEXUS_COLLECTIVES_COMMON_CHUNKING_H

#include <cstddef>

namespace plexus::collectives {

struct Chunk {
  size_t begin = 0;  // first element
  size_t size = 0;   // elements
};

/** floor(p * count / g) without overflow: p*count = p*q*g + p*r with q, r = divmod(count, g). */
inline size_t chunk_begin(size_t count, size_t g, size_t p) {
  const size_t q = count / g;
  const size_t r = count % g;
  return p * q + (p * r) / g;
}

/** The chunk of member p among g members (p < g). */
inline Chunk chunk_of(size_t count, size_t g, size_t p) {
  const size_t begin = chunk_begin(count, g, p);
  return {begin, chunk_begin(count, g, p + 1) - begin};
}

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_CHUNKING_H
