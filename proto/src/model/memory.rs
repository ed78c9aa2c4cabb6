//! Host memory: IOVA-addressed regions, as the RNIC's DMA sees them.

use std::collections::BTreeMap;

/// A DMA access the host memory cannot serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// A new region overlaps an existing one or runs past 2^64.
    #[error("region of {len} octets at {iova:#x} overlaps another or wraps")]
    Overlap {
        /// First IOVA of the new region.
        iova: u64,
        /// Its length.
        len: usize,
    },
    /// No single region holds the whole access.
    #[error("no region holds {len} octets at {iova:#x}")]
    Unbacked {
        /// First IOVA of the access.
        iova: u64,
        /// Its length.
        len: usize,
    },
}

/// The memory of one host: disjoint regions, each contiguous in IOVA space.
///
/// An access must lie inside one region (a memory region maps to one
/// IOVA-contiguous range, so a valid access never spans two). Empty
/// accesses succeed anywhere.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostMemory {
    regions: BTreeMap<u64, Vec<u8>>,
}

impl HostMemory {
    /// No regions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a zero-filled region of `len` octets at `iova`.
    pub fn add_region(&mut self, iova: u64, len: usize) -> Result<(), MemoryError> {
        let overlap = MemoryError::Overlap { iova, len };
        let end = u128::from(iova) + len as u128;
        if len == 0 || end > 1u128 << 64 {
            return Err(overlap);
        }
        let before = self.regions.range(..=iova).next_back();
        let hits_before = before.is_some_and(|(&s, r)| u128::from(s) + r.len() as u128 > u128::from(iova));
        let hits_after = self.regions.range(iova..).next().is_some_and(|(&s, _)| u128::from(s) < end);
        if hits_before || hits_after {
            return Err(overlap);
        }
        self.regions.insert(iova, vec![0; len]);
        Ok(())
    }

    /// The region holding `[iova, iova + len)`: its start and contents.
    fn locate(&self, iova: u64, len: usize) -> Option<(u64, usize)> {
        let (&start, region) = self.regions.range(..=iova).next_back()?;
        let offset = (iova - start) as usize;
        (offset as u128 + len as u128 <= region.len() as u128).then_some((start, offset))
    }

    /// The `len` octets at `iova`.
    pub fn read(&self, iova: u64, len: usize) -> Result<&[u8], MemoryError> {
        if len == 0 {
            return Ok(&[]);
        }
        let (start, offset) = self.locate(iova, len).ok_or(MemoryError::Unbacked { iova, len })?;
        Ok(&self.regions[&start][offset..offset + len])
    }

    /// Writes `data` at `iova`.
    pub fn write(&mut self, iova: u64, data: &[u8]) -> Result<(), MemoryError> {
        if data.is_empty() {
            return Ok(());
        }
        let len = data.len();
        let (start, offset) = self.locate(iova, len).ok_or(MemoryError::Unbacked { iova, len })?;
        if let Some(region) = self.regions.get_mut(&start) {
            region[offset..offset + len].copy_from_slice(data);
        }
        Ok(())
    }

    /// Every region: start IOVA and contents, in address order.
    pub fn regions(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.regions.iter().map(|(&s, r)| (s, r.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_disjoint_and_accesses_stay_inside_one() {
        let mut m = HostMemory::new();
        m.add_region(0x1000, 0x100).unwrap();
        m.add_region(0x1100, 0x100).unwrap();
        assert!(m.add_region(0x10FF, 2).is_err());
        assert!(m.add_region(0x0F00, 0x101).is_err());
        assert!(m.add_region(u64::MAX, 2).is_err());
        m.write(0x10FE, &[1, 2]).unwrap();
        assert_eq!(m.read(0x10FE, 2).unwrap(), &[1, 2]);
        assert!(m.read(0x10FF, 2).is_err(), "spans two regions");
        assert!(m.write(0x2000, &[1]).is_err());
        assert_eq!(m.read(0xdead, 0).unwrap(), &[] as &[u8]);
    }
}
