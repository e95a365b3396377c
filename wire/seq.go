package wire

// MaxSeq is the highest sequence number a source may ever have: 2^53-1.
// Sequence numbers run from 1 to MaxSeq; a store refuses a Publish that
// reaches above it, and a publisher stops before it.
//
// Why 2^53-1, far below the 2^64-1 a uint64 holds:
//
//   - it is the largest integer a JSON number read as an IEEE double keeps
//     exactly (JavaScript's Number.MAX_SAFE_INTEGER), so the status page's
//     JavaScript, /v1/status, umrcv --json and a Python client all read
//     every sequence number exactly;
//   - it leaves the top of the uint64 range free, so a sequence number plus
//     a count (FirstSeq plus the messages of a merged batch, a range's end
//     plus one) never wraps around, and code need not guard every sum;
//   - it is still never reached: at a million messages a second, about 30
//     times what one group sustains today (BENCH.md), a source takes 285
//     years to use it up.
//
// The value is part of the replicated rules (repository.MaxSeq is the same
// number and storegroup checks that they agree): it never changes.
const MaxSeq = 1<<53 - 1
