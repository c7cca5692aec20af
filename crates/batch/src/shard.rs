//! Shards: `--shard I/N` runs the tasks whose id hashes to I of N, so N machines (a Kubernetes
//! Indexed Job's completion indexes) split one tasks file without talking to each other. The
//! hash is SHA-256 of the id: the same on every machine, every version and every platform.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// One shard of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// From 0.
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl Shard {
    /// The whole batch.
    pub const ALL: Self = Self { index: 0, count: 1 };

    /// Whether the task `id` belongs to this shard.
    pub fn contains(&self, id: &str) -> bool {
        shard_of(id, self.count) == self.index
    }
}

/// The shard of `id` among `count`.
pub fn shard_of(id: &str, count: u32) -> u32 {
    let digest = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % u64::from(count.max(1))) as u32
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("`{text}` is not a shard: give I/N with 0 <= I < N (for example 0/4)");
        let (index, count) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = index.trim().parse().map_err(|_| bad())?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Self { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn shards_partition_every_set_of_ids(
            ids in proptest::collection::hash_set("[A-Za-z0-9._-]{1,40}", 0..200),
            count in 1u32..9,
        ) {
            for id in &ids {
                let owners: Vec<u32> = (0..count)
                    .filter(|index| Shard { index: *index, count }.contains(id))
                    .collect();
                prop_assert_eq!(owners.len(), 1, "{} is in shards {:?}", id, owners);
            }
        }

        #[test]
        fn two_shards_split_the_ids_exactly(
            ids in proptest::collection::hash_set("[a-z0-9-]{1,24}", 1..300),
        ) {
            let zero: Vec<&String> = ids.iter().filter(|id| Shard { index: 0, count: 2 }.contains(id)).collect();
            let one: Vec<&String> = ids.iter().filter(|id| Shard { index: 1, count: 2 }.contains(id)).collect();
            prop_assert_eq!(zero.len() + one.len(), ids.len());
            prop_assert!(zero.iter().all(|id| !one.contains(id)));
        }
    }

    #[test]
    fn the_hash_is_stable_and_spreads() {
        // Fixed: a change would move tasks between machines of a running job.
        // SHA-256's first 8 bytes, big-endian, modulo N (the same as Python's
        // `int.from_bytes(sha256(id).digest()[:8], "big") % n`).
        assert_eq!(
            [
                shard_of("task-1", 4),
                shard_of("task-2", 4),
                shard_of("alpha", 4)
            ],
            [3, 0, 2]
        );
        assert_eq!([shard_of("task-1", 7), shard_of("task-2", 7)], [0, 6]);
        let ids: Vec<String> = (0..4000).map(|i| format!("task-{i}")).collect();
        for count in [2u32, 4, 7] {
            let mut sizes = vec![0usize; count as usize];
            for id in &ids {
                sizes[shard_of(id, count) as usize] += 1;
            }
            let even = ids.len() / count as usize;
            assert!(
                sizes.iter().all(|s| s.abs_diff(even) < even / 5),
                "{count}: {sizes:?}"
            );
        }
    }

    #[test]
    fn shards_parse_and_refuse() {
        assert_eq!("1/3".parse(), Ok(Shard { index: 1, count: 3 }));
        for bad in ["3/3", "1", "a/2", "0/0", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
