//! The claims of a pyramid's levels, chained: each level is its own array
//! with its own writer, and a level never claims a plane that the level it
//! is made from has not claimed (its planes are made from those), so that
//! whenever a stream stops (a full disk, a kill) the levels agree. A
//! level's claim that goes beyond its parent's is made as far as the parent
//! allows, and the rest when the parent's claims catch up.

use std::sync::{Arc, Mutex, MutexGuard};

use retile_plan::StreamError;

/// What a claim is: one of the claims made as rows of files complete, or
/// the last, when the stream finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claiming {
    /// Rows complete while the stream runs.
    Row,
    /// The stream's end: every plane written.
    Last,
}

/// Claims an array's planes: called in row order, with the planes every
/// row so far holds.
pub(crate) type Claim = Box<dyn FnMut(u64, Claiming) -> Result<(), StreamError> + Send>;

/// The claims of the levels of one pyramid, shared by their sinks.
///
/// ```
/// use retile_store::ClaimChain;
/// // three levels, each halving its parent's first dimension too
/// let chain = ClaimChain::new(3, true);
/// assert_eq!(chain.levels(), 3);
/// ```
#[derive(Clone)]
pub struct ClaimChain {
    levels: Arc<Mutex<Vec<Level>>>,
    halves_first: bool,
}

/// One level's claims.
#[derive(Default)]
struct Level {
    /// The array's own claim (made once its sink has begun).
    claim: Option<Claim>,
    /// Planes claimed.
    claimed: u64,
    /// Planes the level's writer has asked to claim.
    wanted: u64,
    /// The writer's last claim was asked for.
    last_wanted: bool,
    /// The last claim was made: the level holds every plane it will.
    last: bool,
    /// A claim made for this level on another level's behalf failed.
    failed: Option<String>,
}

/// Level `k` of a [`ClaimChain`], given to its sink.
///
/// ```
/// use retile_store::ClaimChain;
/// let link = ClaimChain::new(2, false).level(1);
/// assert_eq!(link.index(), 1);
/// ```
#[derive(Clone)]
pub struct ChainLink {
    chain: ClaimChain,
    level: usize,
}

impl ClaimChain {
    /// The chain of a pyramid of `levels` levels; `halves_first`: each
    /// level halves its parent's first dimension (one plane for two).
    ///
    /// ```
    /// use retile_store::ClaimChain;
    /// // a pyramid of 4 levels, each with half its parent's planes
    /// let chain = ClaimChain::new(4, true);
    /// assert_eq!(chain.levels(), 4);
    /// assert_eq!(chain.level(3).index(), 3);
    /// ```
    pub fn new(levels: usize, halves_first: bool) -> ClaimChain {
        ClaimChain {
            levels: Arc::new(Mutex::new((0..levels).map(|_| Level::default()).collect())),
            halves_first,
        }
    }

    /// How many levels the chain has.
    ///
    /// ```
    /// use retile_store::ClaimChain;
    /// let chain = ClaimChain::new(2, false);
    /// assert_eq!(chain.levels(), 2);
    /// assert_eq!(chain.clone().levels(), 2); // clones share the levels
    /// ```
    pub fn levels(&self) -> usize {
        self.lock().len()
    }

    /// The link of level `k` (0: the stream itself).
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
    /// use retile_store::{ClaimChain, ZarrOptions, ZarrSink};
    /// let dir = tempfile::tempdir()?;
    /// let chain = ClaimChain::new(2, false);
    /// let sink = |k: usize| ZarrSink::new(ZarrOptions { path: dir.path().join(k.to_string()), ..Default::default() }).chained(chain.level(k));
    /// let (mut level0, mut level1) = (sink(0), sink(1));
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
    /// # let metadata = |k: u32| -> serde_json::Value { serde_json::from_slice(&std::fs::read(dir.path().join(format!("{k}/zarr.json"))).unwrap()).unwrap() };
    /// level0.begin(&plan, &[0])?;
    /// level1.begin(&plan, &[0])?;
    /// level1.write_epoch(&Epoch { index: 0, planes: 2, tiles: &[1; 8], plan: &plan })?;
    /// level1.finish(2)?;
    /// assert_eq!(metadata(1)["shape"][0], 0); // level 0 has claimed nothing yet
    /// level0.write_epoch(&Epoch { index: 0, planes: 2, tiles: &[1; 8], plan: &plan })?;
    /// level0.finish(2)?;
    /// assert_eq!(metadata(1)["shape"][0], 2); // now level 1's claim is made
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn level(&self, k: usize) -> ChainLink {
        ChainLink {
            chain: self.clone(),
            level: k,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Level>> {
        self.levels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Planes level `k` may claim: all for level 0; for another, those
    /// made from planes its parent has claimed (a plane made from an odd
    /// last plane only once the parent holds every plane it will).
    fn allowed(&self, levels: &[Level], k: usize) -> u64 {
        let Some(parent) = k.checked_sub(1).map(|p| &levels[p]) else {
            return u64::MAX;
        };
        match (self.halves_first, parent.last) {
            (false, _) => parent.claimed,
            (true, true) => parent.claimed.div_ceil(2),
            (true, false) => parent.claimed / 2,
        }
    }

    /// Makes the claims that levels `from..` may make now, down the chain
    /// as far as one changes; returns level `from`'s own failure.
    fn settle(&self, levels: &mut [Level], from: usize) -> Result<(), StreamError> {
        for k in from..levels.len() {
            let allowed = self.allowed(levels, k);
            let level = &mut levels[k];
            let planes = level.wanted.min(allowed);
            let last = level.last_wanted && planes == level.wanted;
            let Some(claim) = level.claim.as_mut() else {
                return Ok(());
            };
            if planes <= level.claimed && (level.last || !last) {
                return Ok(());
            }
            let claiming = if last { Claiming::Last } else { Claiming::Row };
            if let Err(e) = claim(planes, claiming) {
                if k == from {
                    return Err(e);
                }
                level.failed.get_or_insert_with(|| e.to_string());
                return Ok(());
            }
            level.claimed = planes;
            level.last = last;
        }
        Ok(())
    }
}

impl ChainLink {
    /// The level's index.
    ///
    /// ```
    /// use retile_store::ClaimChain;
    /// let chain = ClaimChain::new(3, true);
    /// let links: Vec<usize> = (0..chain.levels()).map(|k| chain.level(k).index()).collect();
    /// assert_eq!(links, vec![0, 1, 2]);
    /// ```
    pub fn index(&self) -> usize {
        self.level
    }

    /// The level's array claims `planes` already (a stream appending to
    /// it): its claims, and the levels' below it, go on from there.
    pub(crate) fn start_at(&self, planes: u64) {
        if let Some(level) = self.chain.lock().get_mut(self.level) {
            level.claimed = planes;
            level.wanted = planes;
        }
    }

    /// Hands the array's own claim to the chain: the level's claims are
    /// made through it from here on.
    pub(crate) fn attach(&self, claim: Claim) {
        if let Some(level) = self.chain.lock().get_mut(self.level) {
            level.claim = Some(claim);
        }
    }

    /// The level's writer asks to claim `planes`: claimed now as far as
    /// the parent allows, the rest when the parent's claims catch up (by
    /// the parent's writer), and the levels below follow.
    pub(crate) fn claim(&self, planes: u64, claiming: Claiming) -> Result<(), StreamError> {
        let mut levels = self.chain.lock();
        let Some(level) = levels.get_mut(self.level) else {
            return Err(StreamError::Sink(format!(
                "level {} is not in the pyramid's chain of claims",
                self.level
            )));
        };
        if let Some(reason) = level.failed.take() {
            return Err(StreamError::Sink(reason));
        }
        level.wanted = level.wanted.max(planes);
        level.last_wanted |= claiming == Claiming::Last;
        self.chain.settle(&mut levels, self.level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The claims made: level, planes and what kind.
    type Log = Arc<Mutex<Vec<(usize, u64, Claiming)>>>;

    /// A chain of `n` levels whose claims are recorded.
    fn recorded(n: usize, halves_first: bool) -> (ClaimChain, Log) {
        let chain = ClaimChain::new(n, halves_first);
        let log = Arc::new(Mutex::new(Vec::new()));
        for k in 0..n {
            let log = log.clone();
            chain.level(k).attach(Box::new(move |planes, claiming| {
                log.lock().unwrap().push((k, planes, claiming));
                Ok(())
            }));
        }
        (chain, log)
    }

    #[test]
    fn a_level_waits_for_its_parent() {
        let (chain, log) = recorded(3, false);
        chain.level(2).claim(8, Claiming::Row).unwrap();
        chain.level(1).claim(4, Claiming::Row).unwrap();
        assert!(log.lock().unwrap().is_empty());
        chain.level(0).claim(6, Claiming::Row).unwrap();
        // level 1 claims its 4, level 2 as far as level 1 allows
        assert_eq!(
            *log.lock().unwrap(),
            [
                (0, 6, Claiming::Row),
                (1, 4, Claiming::Row),
                (2, 4, Claiming::Row)
            ]
        );
        chain.level(1).claim(8, Claiming::Row).unwrap();
        assert_eq!(
            log.lock().unwrap()[3..],
            [(1, 6, Claiming::Row), (2, 6, Claiming::Row)]
        );
    }

    #[test]
    fn a_halved_first_dimension_maps_claims_and_the_last_plane_waits_for_the_parents_end() {
        let (chain, log) = recorded(2, true);
        chain.level(1).claim(3, Claiming::Last).unwrap();
        chain.level(0).claim(5, Claiming::Row).unwrap();
        // 5 parent planes make 2 whole child planes; the third needs the parent's end
        assert_eq!(log.lock().unwrap()[1..], [(1, 2, Claiming::Row)]);
        chain.level(0).claim(5, Claiming::Last).unwrap();
        assert_eq!(log.lock().unwrap()[3..], [(1, 3, Claiming::Last)]);
    }

    #[test]
    fn a_failed_claim_made_for_a_level_is_its_next_error() {
        let chain = ClaimChain::new(2, false);
        chain.level(0).attach(Box::new(|_, _| Ok(())));
        chain
            .level(1)
            .attach(Box::new(|_, _| Err(StreamError::Sink("disk full".into()))));
        chain.level(1).claim(2, Claiming::Row).unwrap();
        chain.level(0).claim(2, Claiming::Row).unwrap();
        assert!(chain.level(1).claim(2, Claiming::Last).is_err());
    }
}
