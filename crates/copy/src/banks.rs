//! Shared-memory bank conflicts of an access pattern, and the swizzle that
//! removes them.
//!
//! Shared memory is split into `banks` banks of `bank_bytes`-byte words,
//! word `w` in bank `w mod banks`. A warp-wide instruction is served in
//! *phases* of as many lanes as move `banks * bank_bytes` bytes (all 32
//! lanes of 4-byte accesses, 16 of 8-byte ones, 8 of 16-byte ones); in a
//! phase, a bank delivers one word per cycle, so the phase takes as many
//! *wavefronts* as the most distinct words asked of one bank (lanes asking
//! for the same word share it). The ideal is `ceil(distinct words /
//! banks)` per phase; the difference is the conflicts.
//!
//! ```
//! use retile_copy::{AccessPattern, BankAnalysis, Banks};
//! use retile_layout::ComposedLayout;
//! // 32 threads each read one row of a 32x32 row-major tile of floats
//! let memory: ComposedLayout = "(32,32):(32,1)".parse()?;
//! let threads = "(32,32):(1,32)".parse()?; // (thread, value) -> tile index (row + 32 col)
//! let pattern = AccessPattern::from_tv(&threads, 1, 32)?;
//! let analysis = BankAnalysis::new(memory, pattern, 32, Banks::default())?;
//! assert_eq!((analysis.report.wavefronts(), analysis.report.ideal()), (1024, 32));
//! let best = analysis.suggestion.as_ref().unwrap();
//! assert!(best.report.conflict_free());
//! assert_eq!(best.swizzle.to_string(), "Sw<5,0,5>");
//! # Ok::<(), retile_copy::CopyError>(())
//! ```

use std::fmt;

use retile_layout::{ceil_div, ComposedLayout, IntTuple, Layout, Swizzle};

use crate::error::{CopyError, Result};
use crate::transpose::{Access, Transpose, TransposePlan, TransposeRequest};

fn invalid(message: String) -> CopyError {
    CopyError::Invalid(message)
}

/// The banks of shared memory: how many, and how wide.
///
/// ```
/// let b = retile_copy::Banks::default();
/// assert_eq!((b.banks, b.bank_bytes), (32, 4));
/// assert!(retile_copy::Banks::new(0, 4).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Banks {
    /// Banks (32 on NVIDIA GPUs and AMD's CDNA LDS).
    pub banks: i64,
    /// Bytes of one bank's word (4).
    pub bank_bytes: i64,
}

impl Default for Banks {
    fn default() -> Self {
        Banks {
            banks: 32,
            bank_bytes: 4,
        }
    }
}

impl Banks {
    /// `banks` banks of `bank_bytes` bytes; both from 1 to 1024.
    ///
    /// ```
    /// assert_eq!(retile_copy::Banks::new(64, 4).unwrap().banks, 64);
    /// ```
    pub fn new(banks: i64, bank_bytes: i64) -> Result<Banks> {
        if !(1..=1024).contains(&banks) || !(1..=1024).contains(&bank_bytes) {
            return Err(invalid(format!(
                "banks and bank_bytes must be from 1 to 1024, got banks={banks}, bank_bytes={bank_bytes}"
            )));
        }
        Ok(Banks { banks, bank_bytes })
    }

    /// The bank of the element at offset `offset`, of `element_bits` bits
    /// (its first bank, if it spans several).
    ///
    /// ```
    /// let b = retile_copy::Banks::default();
    /// assert_eq!((b.bank_of_element(3, 16), b.bank_of_element(3, 64)), (1, 6));
    /// ```
    pub fn bank_of_element(&self, offset: i64, element_bits: i64) -> i64 {
        offset
            .saturating_mul(element_bits)
            .div_euclid(self.bank_bytes * 8)
            .rem_euclid(self.banks)
    }

    /// Lanes served together in one phase when each moves `lane_bits` bits:
    /// as many as fill every bank once (at least one).
    ///
    /// ```
    /// let b = retile_copy::Banks::default();
    /// assert_eq!((b.lanes_per_phase(32), b.lanes_per_phase(64), b.lanes_per_phase(128)), (32, 16, 8));
    /// ```
    pub fn lanes_per_phase(&self, lane_bits: i64) -> usize {
        (self.banks.saturating_mul(self.bank_bytes * 8) / lane_bits.max(1)).max(1) as usize
    }

    /// The bank of byte `address` (any integer, negative ones counted from the top).
    ///
    /// ```
    /// let b = retile_copy::Banks::default();
    /// assert_eq!((b.bank_of(0), b.bank_of(4), b.bank_of(128), b.bank_of(-4)), (0, 1, 0, 31));
    /// ```
    pub fn bank_of(&self, address: i64) -> i64 {
        address.div_euclid(self.bank_bytes).rem_euclid(self.banks)
    }
}

/// One lane's access: the tile elements of one vector, in order (their
/// shared-memory offsets must be consecutive).
///
/// ```
/// let lane = retile_copy::LaneAccess { elements: vec![4, 5] };
/// assert_eq!(lane.elements.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneAccess {
    /// Tile indices (colexicographic, the index the memory layout takes).
    pub elements: Vec<i64>,
}

/// One warp-wide instruction: every lane's access (`None`: the lane is idle).
///
/// ```
/// use retile_copy::{Instruction, LaneAccess};
/// let i = Instruction { warp: 0, step: 0, lanes: vec![Some(LaneAccess { elements: vec![0] }), None] };
/// assert_eq!(i.active(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// Which warp issues it.
    pub warp: i64,
    /// Which of the warp's accesses it is (0 first).
    pub step: i64,
    /// Lane by lane.
    pub lanes: Vec<Option<LaneAccess>>,
}

impl Instruction {
    /// Lanes that access something.
    ///
    /// ```
    /// use retile_copy::AccessPattern;
    /// // 8 threads fill 8 lanes of a 32-lane warp
    /// let p = AccessPattern::threads(8, 1, 64, 32).unwrap();
    /// assert_eq!(p.instructions[0].active(), 8);
    /// let mut idle = p.instructions[0].clone();
    /// idle.lanes[3] = None;
    /// assert_eq!(idle.active(), 7);
    /// ```
    pub fn active(&self) -> usize {
        self.lanes.iter().flatten().count()
    }

    /// The widest lane's elements.
    fn widest(&self) -> i64 {
        self.lanes
            .iter()
            .flatten()
            .map(|l| l.elements.len() as i64)
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Lanes per phase for elements of `element_bits` bits.
    ///
    /// ```
    /// use retile_copy::{Banks, Instruction, LaneAccess};
    /// let lane = Some(LaneAccess { elements: vec![0, 1, 2, 3] });
    /// let i = Instruction { warp: 0, step: 0, lanes: vec![lane; 32] };
    /// assert_eq!(i.lanes_per_phase(32, Banks::default()), 8);
    /// ```
    pub fn lanes_per_phase(&self, element_bits: i64, banks: Banks) -> usize {
        banks.lanes_per_phase(self.widest().saturating_mul(element_bits))
    }
}

/// Which thread accesses which elements, instruction by instruction.
///
/// ```
/// use retile_copy::AccessPattern;
/// // 4 threads, 2 vectors of 2 each: thread t's elements 2t, 2t+1, then 8+2t, 9+2t
/// let p = AccessPattern::threads(4, 2, 16, 32).unwrap();
/// assert_eq!(p.instructions.len(), 2);
/// assert_eq!(p.instructions[1].lanes[3].as_ref().unwrap().elements, vec![14, 15]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPattern {
    /// The instructions, warp by warp, each warp's in order.
    pub instructions: Vec<Instruction>,
    /// Lanes per warp.
    pub warp: i64,
    /// Where the pattern came from, in words.
    pub source: String,
}

/// Most element accesses a pattern may hold (lanes x vector elements).
///
/// ```
/// use retile_copy::{AccessPattern, MAX_ACCESSES};
/// assert_eq!(MAX_ACCESSES, 1 << 22);
/// // 1024 threads x 8192 elements each: refused before anything is built
/// let err = AccessPattern::threads(1024, 1, 2 * MAX_ACCESSES, 32).unwrap_err();
/// assert!(err.to_string().contains("is 8388608 element accesses, more than the 4194304 analysed"), "{err}");
/// ```
pub const MAX_ACCESSES: i64 = 1 << 22;

impl AccessPattern {
    /// The pattern of a CuTe thread-value layout `(thread, value) -> tile
    /// index`: each thread reads its values `vector` at a time, in value
    /// order; instruction `k` of a warp is every lane's `k`-th vector.
    ///
    /// ```
    /// use retile_copy::AccessPattern;
    /// let tv = "((4,8),(2,2)):((32,1),(16,8))".parse().unwrap(); // mma.m16n8k8 C
    /// let p = AccessPattern::from_tv(&tv, 2, 32).unwrap();
    /// assert_eq!(p.instructions.len(), 2);
    /// assert_eq!(p.instructions[0].lanes[1].as_ref().unwrap().elements, vec![32, 48]);
    /// ```
    pub fn from_tv(tv: &Layout, vector: i64, warp: i64) -> Result<AccessPattern> {
        if tv.rank() != 2 {
            return Err(invalid(format!(
                "a thread-value layout has rank 2 (threads, values); {tv} has rank {}",
                tv.rank()
            )));
        }
        let (threads, values) = (tv.mode(0)?.size()?, tv.mode(1)?.size()?);
        check_lanes(vector, warp)?;
        if values % vector != 0 {
            return Err(invalid(format!(
                "each thread of {tv} holds {values} values, not a multiple of the vector of {vector} elements; \
                 give a vector_bytes that divides {values} elements"
            )));
        }
        check_count(threads, values)?;
        let element = |t: i64, v: i64| {
            tv.eval_coord(&IntTuple::Tuple(vec![IntTuple::Int(t), IntTuple::Int(v)]))
        };
        let mut instructions = Vec::new();
        for w in 0..ceil_div(threads, warp) {
            for step in 0..values / vector {
                let lanes = (w * warp..(w * warp + warp).min(threads))
                    .map(|t| {
                        let elements = (0..vector)
                            .map(|j| element(t, step * vector + j))
                            .collect::<retile_layout::Result<Vec<_>>>()?;
                        Ok(Some(LaneAccess { elements }))
                    })
                    .collect::<Result<Vec<_>>>()?;
                instructions.push(Instruction {
                    warp: w,
                    step,
                    lanes,
                });
            }
        }
        Ok(AccessPattern {
            instructions,
            warp,
            source: format!(
                "thread-value layout {tv}, {vector} element{} per access",
                if vector == 1 { "" } else { "s" }
            ),
        })
    }

    /// `threads` threads reading a tile of `elements` elements `vector` at a
    /// time, thread `t`'s `k`-th vector at `(k * threads + t) * vector`: the
    /// layout `(threads, (vector, rest)) : (vector, (1, threads * vector))`.
    ///
    /// ```
    /// let p = retile_copy::AccessPattern::threads(32, 4, 256, 32).unwrap();
    /// assert_eq!(p.instructions.len(), 2);
    /// assert!(retile_copy::AccessPattern::threads(32, 4, 100, 32).is_err());
    /// ```
    pub fn threads(threads: i64, vector: i64, elements: i64, warp: i64) -> Result<AccessPattern> {
        check_lanes(vector, warp)?;
        if threads < 1 || elements < 1 {
            return Err(invalid(format!(
                "threads ({threads}) and the tile's elements ({elements}) must be positive"
            )));
        }
        let per_round = threads.checked_mul(vector).filter(|&n| elements % n == 0);
        let Some(per_round) = per_round else {
            return Err(invalid(format!(
                "{threads} threads reading {vector} elements each do not cover the tile's {elements} elements \
                 in whole rounds; give a thread count or vector that divides it, or a thread-value layout"
            )));
        };
        let tv = Layout::new(
            IntTuple::Tuple(vec![
                IntTuple::Int(threads),
                IntTuple::from(&[vector, elements / per_round][..]),
            ]),
            IntTuple::Tuple(vec![
                IntTuple::Int(vector),
                IntTuple::from(&[1, per_round][..]),
            ]),
        )?;
        AccessPattern::from_tv(&tv, vector, warp)
    }

    /// The loads of an in-thread transpose plan (source side).
    ///
    /// ```
    /// use retile_copy::{AccessPattern, TransposePlan, TransposeRequest};
    /// let r = TransposeRequest::new(64, 16, 128, "(64,16):(1,64)".parse().unwrap(), "(64,16):(16,1)".parse().unwrap());
    /// let TransposePlan::Applies(t) = r.plan().unwrap() else { panic!() };
    /// let loads = AccessPattern::loads(&t, 32).unwrap();
    /// assert_eq!(loads.instructions.len() as i64, 2 * t.loads);
    /// ```
    pub fn loads(t: &Transpose, warp: i64) -> Result<AccessPattern> {
        Self::of_plan(t, warp, "loads", |thread| t.loads_of(thread))
    }

    /// The stores of an in-thread transpose plan (destination side).
    ///
    /// ```
    /// use retile_copy::{AccessPattern, TransposePlan, TransposeRequest};
    /// let r = TransposeRequest::new(64, 16, 128, "(64,16):(1,64)".parse().unwrap(), "(64,16):(16,1)".parse().unwrap());
    /// let TransposePlan::Applies(t) = r.plan().unwrap() else { panic!() };
    /// let stores = AccessPattern::stores(&t, 32).unwrap();
    /// assert_eq!(stores.instructions[0].lanes[0].as_ref().unwrap().elements.len(), 8);
    /// ```
    pub fn stores(t: &Transpose, warp: i64) -> Result<AccessPattern> {
        Self::of_plan(t, warp, "stores", |thread| t.stores_of(thread))
    }

    fn of_plan(
        t: &Transpose,
        warp: i64,
        what: &str,
        accesses: impl Fn(i64) -> Result<Vec<Access>>,
    ) -> Result<AccessPattern> {
        check_lanes(1, warp)?;
        let per_thread = if what == "loads" { t.loads } else { t.stores };
        let width = if what == "loads" {
            t.load_width
        } else {
            t.store_width
        };
        let blocks = t.block_origins(0).len() as i64;
        check_count(
            t.threads,
            per_thread.saturating_mul(width).saturating_mul(blocks),
        )?;
        let column_strides = retile_layout::Layout::from_shape(IntTuple::from(&t.shape[..]))?
            .flat_modes()
            .iter()
            .map(|m| m.1)
            .collect::<Vec<_>>();
        let index = |a: &Access, j: i64| -> i64 {
            a.coord
                .iter()
                .zip(&column_strides)
                .enumerate()
                .map(|(d, (c, s))| (c + if d == a.dim { j } else { 0 }) * s)
                .sum()
        };
        let per_lane: Vec<Vec<Access>> = (0..t.threads).map(&accesses).collect::<Result<_>>()?;
        let steps = per_lane.iter().map(Vec::len).max().unwrap_or(0) as i64;
        let mut instructions = Vec::new();
        for w in 0..ceil_div(t.threads, warp) {
            for step in 0..steps {
                let lanes = (w * warp..(w * warp + warp).min(t.threads))
                    .map(|thread| {
                        per_lane[thread as usize]
                            .get(step as usize)
                            .map(|a| LaneAccess {
                                elements: (0..a.width).map(|j| index(a, j)).collect(),
                            })
                    })
                    .collect::<Vec<_>>();
                if lanes.iter().any(Option::is_some) {
                    instructions.push(Instruction {
                        warp: w,
                        step,
                        lanes,
                    });
                }
            }
        }
        Ok(AccessPattern {
            instructions,
            warp,
            source: format!("the {what} of {} threads", t.threads),
        })
    }

    /// The largest tile index any lane touches, plus one.
    fn extent(&self) -> i64 {
        self.lanes()
            .flat_map(|l| l.elements.iter().copied())
            .max()
            .map_or(0, |m| m + 1)
    }

    fn lanes(&self) -> impl Iterator<Item = &LaneAccess> {
        self.instructions
            .iter()
            .flat_map(|i| i.lanes.iter().flatten())
    }
}

fn check_lanes(vector: i64, warp: i64) -> Result<()> {
    if !(1..=4096).contains(&vector) || !(1..=1024).contains(&warp) {
        return Err(invalid(format!(
            "the vector must have 1 to 4096 elements and a warp 1 to 1024 lanes; got {vector} and {warp}"
        )));
    }
    Ok(())
}

fn check_count(threads: i64, per_thread: i64) -> Result<()> {
    let count = threads.saturating_mul(per_thread);
    if count > MAX_ACCESSES {
        return Err(invalid(format!(
            "{threads} threads x {per_thread} elements is {count} element accesses, more than the {MAX_ACCESSES} analysed"
        )));
    }
    Ok(())
}

/// What one instruction costs.
///
/// ```
/// let c = retile_copy::InstructionConflicts { warp: 0, step: 0, phases: 1, wavefronts: 4, ideal: 1, degree: 4 };
/// assert_eq!(c.conflicts(), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstructionConflicts {
    /// The warp that issues it.
    pub warp: i64,
    /// Its place in the warp's accesses.
    pub step: i64,
    /// Phases with an active lane.
    pub phases: i64,
    /// Wavefronts it takes: per phase, the most distinct words asked of one bank.
    pub wavefronts: i64,
    /// Wavefronts it would take without conflicts: per phase, `ceil(distinct words / banks)`.
    pub ideal: i64,
    /// The worst phase's conflict degree: the most distinct words asked of one bank.
    pub degree: i64,
}

impl InstructionConflicts {
    /// Wavefronts beyond the ideal.
    ///
    /// ```
    /// use retile_copy::InstructionConflicts;
    /// let c = InstructionConflicts { warp: 0, step: 1, phases: 2, wavefronts: 6, ideal: 2, degree: 4 };
    /// assert_eq!(c.conflicts(), 4);
    /// assert_eq!(InstructionConflicts { wavefronts: 2, ..c }.conflicts(), 0);
    /// ```
    pub fn conflicts(&self) -> i64 {
        self.wavefronts - self.ideal
    }
}

impl fmt::Display for InstructionConflicts {
    /// `(warp 0, access 1): 2 wavefronts, ideal 1, 2-way`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(warp {}, access {}): {} wavefront{}, ideal {}, {}-way",
            self.warp,
            self.step,
            self.wavefronts,
            if self.wavefronts == 1 { "" } else { "s" },
            self.ideal,
            self.degree
        )
    }
}

/// The conflicts of every instruction of a pattern against one memory layout.
///
/// ```
/// use retile_copy::{AccessPattern, BankReport, Banks};
/// let offsets: Vec<i64> = (0..64).map(|i| (i % 8) * 8 + i / 8).collect(); // a transposed 8x8 tile
/// let pattern = AccessPattern::threads(8, 1, 64, 32).unwrap();
/// let report = BankReport::new(&offsets, &pattern, 32, Banks::default()).unwrap();
/// assert_eq!(report.instructions.len(), 8);
/// // lanes t and t + 4 read words 32 apart, in the same bank
/// assert_eq!((report.wavefronts(), report.ideal(), report.degree()), (16, 8, 2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankReport {
    /// Instruction by instruction, in the pattern's order.
    pub instructions: Vec<InstructionConflicts>,
}

impl BankReport {
    /// The conflicts of `pattern` when tile index `i` lives at element
    /// offset `offsets[i]` (elements of `element_bits` bits); an error if a
    /// lane's vector is not contiguous there or reaches past the table.
    ///
    /// ```
    /// use retile_copy::{AccessPattern, BankReport, Banks};
    /// let rows: Vec<i64> = (0..64).collect();
    /// let pattern = AccessPattern::threads(32, 1, 64, 32)?;
    /// let report = BankReport::new(&rows, &pattern, 32, Banks::default())?;
    /// assert_eq!((report.instructions.len(), report.wavefronts()), (2, 2));
    /// // vectors of 2 elements, 8 apart in memory: not contiguous
    /// let transposed: Vec<i64> = (0..64).map(|i| (i % 8) * 8 + i / 8).collect();
    /// let err = BankReport::new(&transposed, &AccessPattern::threads(8, 2, 64, 32)?, 32, Banks::default()).unwrap_err();
    /// assert!(err.to_string().contains("is not contiguous"), "{err}");
    /// # Ok::<(), retile_copy::CopyError>(())
    /// ```
    pub fn new(
        offsets: &[i64],
        pattern: &AccessPattern,
        element_bits: i64,
        banks: Banks,
    ) -> Result<BankReport> {
        let mut words = Vec::new();
        let instructions = pattern
            .instructions
            .iter()
            .map(|i| cost(i, offsets, element_bits, banks, &mut words))
            .collect::<Result<_>>()?;
        Ok(BankReport { instructions })
    }

    /// Total wavefronts.
    ///
    /// ```
    /// use retile_copy::{BankReport, InstructionConflicts};
    /// let c = |step, wavefronts, ideal, degree| InstructionConflicts { warp: 0, step, phases: 1, wavefronts, ideal, degree };
    /// let report = BankReport { instructions: vec![c(0, 1, 1, 1), c(1, 4, 1, 4)] };
    /// assert_eq!(report.wavefronts(), 5);
    /// ```
    pub fn wavefronts(&self) -> i64 {
        self.instructions.iter().map(|i| i.wavefronts).sum()
    }

    /// Total wavefronts without conflicts.
    ///
    /// ```
    /// use retile_copy::{BankReport, InstructionConflicts};
    /// let c = |step, wavefronts, ideal, degree| InstructionConflicts { warp: 0, step, phases: 1, wavefronts, ideal, degree };
    /// let report = BankReport { instructions: vec![c(0, 1, 1, 1), c(1, 4, 1, 4)] };
    /// assert_eq!(report.ideal(), 2);
    /// ```
    pub fn ideal(&self) -> i64 {
        self.instructions.iter().map(|i| i.ideal).sum()
    }

    /// Wavefronts beyond the ideal.
    ///
    /// ```
    /// use retile_copy::{BankReport, InstructionConflicts};
    /// let c = |step, wavefronts, ideal, degree| InstructionConflicts { warp: 0, step, phases: 1, wavefronts, ideal, degree };
    /// let report = BankReport { instructions: vec![c(0, 1, 1, 1), c(1, 4, 1, 4)] };
    /// assert_eq!(report.conflicts(), 3);
    /// assert_eq!(report.conflicts(), report.wavefronts() - report.ideal());
    /// ```
    pub fn conflicts(&self) -> i64 {
        self.wavefronts() - self.ideal()
    }

    /// The worst conflict degree of any phase (1: none).
    ///
    /// ```
    /// use retile_copy::{BankReport, InstructionConflicts};
    /// let c = |step, wavefronts, ideal, degree| InstructionConflicts { warp: 0, step, phases: 1, wavefronts, ideal, degree };
    /// let report = BankReport { instructions: vec![c(0, 1, 1, 1), c(1, 4, 1, 4)] };
    /// assert_eq!(report.degree(), 4);
    /// assert_eq!(BankReport { instructions: vec![] }.degree(), 0);
    /// ```
    pub fn degree(&self) -> i64 {
        self.instructions
            .iter()
            .map(|i| i.degree)
            .max()
            .unwrap_or(0)
    }

    /// No instruction takes more wavefronts than its ideal.
    ///
    /// ```
    /// use retile_copy::{BankReport, InstructionConflicts};
    /// let c = |step, wavefronts, ideal, degree| InstructionConflicts { warp: 0, step, phases: 1, wavefronts, ideal, degree };
    /// let report = BankReport { instructions: vec![c(0, 1, 1, 1), c(1, 4, 1, 4)] };
    /// assert!(!report.conflict_free());
    /// assert!(BankReport { instructions: vec![c(0, 2, 2, 1)] }.conflict_free());
    /// ```
    pub fn conflict_free(&self) -> bool {
        self.conflicts() == 0
    }
}

impl fmt::Display for BankReport {
    /// `16 instructions, 64 wavefronts for 16 ideal (48 conflicts, up to 4-way)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} instructions, {} wavefronts for {} ideal ({} conflicts, up to {}-way)",
            self.instructions.len(),
            self.wavefronts(),
            self.ideal(),
            self.conflicts(),
            self.degree()
        )
    }
}

/// The byte address where `lane`'s vector starts, checked contiguous.
fn lane_start(lane: &LaneAccess, offsets: &[i64]) -> Result<Option<i64>> {
    let offset = |e: i64| {
        usize::try_from(e)
            .ok()
            .and_then(|e| offsets.get(e).copied())
            .ok_or_else(|| {
                invalid(format!(
                    "tile index {e} is outside the shared-memory layout's {} elements",
                    offsets.len()
                ))
            })
    };
    let Some(&first) = lane.elements.first() else {
        return Ok(None);
    };
    let start = offset(first)?;
    for (j, &e) in lane.elements.iter().enumerate().skip(1) {
        if offset(e)? != start.saturating_add(j as i64) {
            return Err(invalid(format!(
                "a vector of tile elements {:?} is not contiguous in shared memory (offsets {:?}); \
                 use a smaller vector, or a layout that keeps each vector together",
                lane.elements,
                lane.elements
                    .iter()
                    .map(|&e| offset(e).unwrap_or(i64::MIN))
                    .collect::<Vec<_>>()
            )));
        }
    }
    Ok(Some(start))
}

/// The cost of one instruction; `words` is scratch space.
fn cost(
    instruction: &Instruction,
    offsets: &[i64],
    element_bits: i64,
    banks: Banks,
    words: &mut Vec<i64>,
) -> Result<InstructionConflicts> {
    let bank_bits = banks.bank_bytes * 8;
    let per_phase = instruction.lanes_per_phase(element_bits, banks);
    let mut out = InstructionConflicts {
        warp: instruction.warp,
        step: instruction.step,
        phases: 0,
        wavefronts: 0,
        ideal: 0,
        degree: 0,
    };
    for phase in instruction.lanes.chunks(per_phase) {
        words.clear();
        for lane in phase.iter().flatten() {
            let Some(start) = lane_start(lane, offsets)? else {
                continue;
            };
            let bits = |o: i64| {
                o.checked_mul(element_bits)
                    .ok_or_else(|| invalid("a shared-memory address overflows".into()))
            };
            let first = bits(start)?.div_euclid(bank_bits);
            let last = (bits(start)? + (lane.elements.len() as i64 * element_bits) - 1)
                .div_euclid(bank_bits);
            words.extend(first..=last);
        }
        if words.is_empty() {
            continue;
        }
        words.sort_unstable();
        words.dedup();
        let mut per_bank = vec![0i64; banks.banks as usize];
        for w in words.iter() {
            per_bank[w.rem_euclid(banks.banks) as usize] += 1;
        }
        let most = per_bank.iter().copied().max().unwrap_or(0);
        out.phases += 1;
        out.wavefronts += most;
        out.ideal += ceil_div(words.len() as i64, banks.banks);
        out.degree = out.degree.max(most);
    }
    Ok(out)
}

/// A swizzle that lowers the conflicts, and what they become.
///
/// ```
/// # use retile_copy::{AccessPattern, BankAnalysis, Banks};
/// let rows = AccessPattern::from_tv(&"(8,8):(1,8)".parse()?, 1, 32)?; // thread t reads row t
/// let a = BankAnalysis::new("(8,8):(8,1)".parse()?, rows, 32, Banks::default())?;
/// let s = a.suggestion.unwrap();
/// assert_eq!(s.memory.swizzle(), s.swizzle);
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The swizzle.
    pub swizzle: Swizzle,
    /// The shared-memory layout with it (replacing any swizzle it had).
    pub memory: ComposedLayout,
    /// The conflicts with it.
    pub report: BankReport,
}

/// Bank conflicts of an access pattern against a shared-memory layout, and
/// the swizzle, among the `Sw<B,M,S>` that keep the tile's offsets and
/// every vector contiguous, that removes them (or leaves the fewest).
///
/// ```
/// use retile_copy::{AccessPattern, BankAnalysis, Banks};
/// let rows = AccessPattern::from_tv(&"(8,8):(1,8)".parse()?, 1, 32)?; // thread t reads row t
/// let a = BankAnalysis::new("(8,8):(8,1)".parse()?, rows, 32, Banks::default())?;
/// assert_eq!((a.report.wavefronts(), a.report.ideal(), a.report.degree()), (16, 8, 2));
/// assert_eq!(a.suggestion.as_ref().unwrap().swizzle.to_string(), "Sw<1,2,3>");
/// assert!(a.to_string().starts_with("BankConflicts(instructions=8, wavefronts=16"));
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankAnalysis {
    /// The shared-memory layout: tile index -> element offset.
    pub memory: ComposedLayout,
    /// Who accesses what.
    pub pattern: AccessPattern,
    /// Bits per element.
    pub element_bits: i64,
    /// The banks.
    pub banks: Banks,
    /// The conflicts as the layout is.
    pub report: BankReport,
    /// The best swizzle, when the layout has conflicts and a swizzle lowers them.
    pub suggestion: Option<Suggestion>,
}

/// Offsets past `2^MAX_SEARCH_BITS` are not searched for a swizzle.
///
/// ```
/// use retile_copy::{AccessPattern, BankAnalysis, Banks, MAX_SEARCH_BITS};
/// let rows = AccessPattern::from_tv(&"(8,8):(1,8)".parse()?, 1, 32)?;
/// // rows 2^22 elements apart: every row in the same bank, offsets up to 2^24 + 2^23
/// let far = format!("(8,8):({},1)", 1 << (MAX_SEARCH_BITS - 2));
/// let a = BankAnalysis::new(far.parse()?, rows, 32, Banks::default())?;
/// assert_eq!(a.report.degree(), 8);
/// assert!(a.suggestion.is_none());
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
pub const MAX_SEARCH_BITS: u32 = 24;

impl BankAnalysis {
    /// Analyses `pattern` against `memory` and searches every swizzle
    /// `Sw<B,M,S>` with `B >= 1` whose bits lie inside the tile's offsets
    /// (`B + M + |S| <= bits of the largest offset`) that maps the tile's
    /// offsets onto themselves and keeps every vector contiguous; the one
    /// with the fewest wavefronts wins (ties: fewer bits, smaller `|S|`,
    /// positive `S`, smaller `M`), if it has fewer than the layout as it is.
    ///
    /// ```
    /// use retile_copy::{AccessPattern, BankAnalysis, Banks};
    /// let pattern = AccessPattern::threads(32, 1, 64, 32)?;
    /// let a = BankAnalysis::new("64:1".parse()?, pattern.clone(), 32, Banks::default())?;
    /// assert!(a.report.conflict_free() && a.suggestion.is_none());
    /// let err = BankAnalysis::new("64:1".parse()?, pattern, 0, Banks::default()).unwrap_err();
    /// assert!(err.to_string().contains("element_bits must be from 1 to 65536"), "{err}");
    /// # Ok::<(), retile_copy::CopyError>(())
    /// ```
    pub fn new(
        memory: ComposedLayout,
        pattern: AccessPattern,
        element_bits: i64,
        banks: Banks,
    ) -> Result<BankAnalysis> {
        if !(1..=1 << 16).contains(&element_bits) {
            return Err(invalid(format!(
                "element_bits must be from 1 to 65536, got {element_bits}"
            )));
        }
        let offsets = table(&memory, pattern.extent())?;
        let report = BankReport::new(&offsets, &pattern, element_bits, banks)?;
        let suggestion = if report.conflict_free() {
            None
        } else {
            search(&memory, &pattern, element_bits, banks, report.wavefronts())?
        };
        Ok(BankAnalysis {
            memory,
            pattern,
            element_bits,
            banks,
            report,
            suggestion,
        })
    }

    /// The conflicts after the suggestion (the same as before without one).
    ///
    /// ```
    /// use retile_copy::{AccessPattern, BankAnalysis, Banks};
    /// let rows = AccessPattern::from_tv(&"(8,8):(1,8)".parse()?, 1, 32)?;
    /// let a = BankAnalysis::new("(8,8):(8,1)".parse()?, rows.clone(), 32, Banks::default())?;
    /// assert_eq!((a.report.conflicts(), a.best().conflicts()), (8, 0));
    /// let plain = BankAnalysis::new("(8,8):(1,8)".parse()?, rows, 32, Banks::default())?;
    /// assert_eq!(plain.best(), &plain.report);
    /// # Ok::<(), retile_copy::CopyError>(())
    /// ```
    pub fn best(&self) -> &BankReport {
        self.suggestion.as_ref().map_or(&self.report, |s| &s.report)
    }
}

impl BankAnalysis {
    /// The analysis in lines: the pattern, the totals, the first `listed`
    /// instructions, and the suggestion with its totals.
    ///
    /// ```
    /// use retile_copy::{AccessPattern, BankAnalysis, Banks};
    /// let rows = AccessPattern::from_tv(&"(8,8):(1,8)".parse()?, 1, 32)?;
    /// let a = BankAnalysis::new("(8,8):(8,1)".parse()?, rows, 32, Banks::default())?;
    /// let text = a.details(2);
    /// assert!(text.contains("instruction 1 (warp 0, access 1): 2 wavefronts, ideal 1, 2-way"), "{text}");
    /// assert!(text.contains("suggested swizzle: Sw<1,2,3>"), "{text}");
    /// # Ok::<(), retile_copy::CopyError>(())
    /// ```
    pub fn details(&self, listed: usize) -> String {
        let mut out = format!(
            "shared memory {}; {}\n{} banks of {} bytes, {}-bit elements, warps of {} lanes\n",
            self.memory,
            self.pattern.source,
            self.banks.banks,
            self.banks.bank_bytes,
            self.element_bits,
            self.pattern.warp
        );
        let list = |out: &mut String, report: &BankReport| {
            out.push_str(&format!("  {report}\n"));
            for (k, c) in report.instructions.iter().take(listed).enumerate() {
                out.push_str(&format!("  instruction {k} {c}\n"));
            }
            if report.instructions.len() > listed {
                out.push_str(&format!(
                    "  ... {} more instructions\n",
                    report.instructions.len() - listed
                ));
            }
        };
        out.push_str("as given:\n");
        list(&mut out, &self.report);
        match &self.suggestion {
            Some(s) => {
                out.push_str(&format!(
                    "suggested swizzle: {} (layout {})\n",
                    s.swizzle, s.memory
                ));
                list(&mut out, &s.report);
            }
            None if self.report.conflict_free() => {
                out.push_str("no conflicts: no swizzle needed\n")
            }
            None => out
                .push_str("no swizzle that keeps the tile and its vectors lowers the conflicts\n"),
        }
        out
    }
}

impl fmt::Display for BankAnalysis {
    /// `BankConflicts(instructions=.., wavefronts=.., ideal=.., conflicts=.., degree=.., swizzle=.., after=..)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.report;
        write!(
            f,
            "BankConflicts(instructions={}, wavefronts={}, ideal={}, conflicts={}, degree={}, ",
            r.instructions.len(),
            r.wavefronts(),
            r.ideal(),
            r.conflicts(),
            r.degree()
        )?;
        match &self.suggestion {
            Some(s) => write!(
                f,
                "swizzle={}, after={}, conflicts_after={})",
                s.swizzle,
                s.report.wavefronts(),
                s.report.conflicts()
            ),
            None => write!(f, "swizzle=None)"),
        }
    }
}

/// The memory layout's offsets of tile indices `0..max(size, extent)`.
fn table(memory: &ComposedLayout, extent: i64) -> Result<Vec<i64>> {
    let size = memory.size()?;
    if extent > size {
        return Err(invalid(format!(
            "the access pattern reaches tile index {}, past the {size} elements of {memory}",
            extent - 1
        )));
    }
    check_count(1, size)?;
    Ok(memory.table(size)?)
}

/// The best swizzle of the inner layout, if one beats `to_beat` wavefronts.
fn search(
    memory: &ComposedLayout,
    pattern: &AccessPattern,
    element_bits: i64,
    banks: Banks,
    to_beat: i64,
) -> Result<Option<Suggestion>> {
    let plain = ComposedLayout::new(Swizzle::default(), memory.offset(), memory.layout().clone());
    let inner = table(&plain, pattern.extent())?;
    let Some(&largest) = inner.iter().max() else {
        return Ok(None);
    };
    if inner.iter().any(|&o| o < 0) || largest >= 1 << MAX_SEARCH_BITS {
        return Ok(None);
    }
    let span = (64 - largest.leading_zeros()) as i64;
    let mut present = vec![false; largest as usize + 1];
    inner.iter().for_each(|&o| present[o as usize] = true);
    // (wavefronts, preference rank, swizzle, its report): fewest wavefronts,
    // then the simplest swizzle
    let mut best: Option<(i64, SwizzleRank, Swizzle, BankReport)> = None;
    let mut swizzled = vec![0; inner.len()];
    for (bits, base, shift) in candidates(span) {
        let Ok(swizzle) = Swizzle::new(bits, base, shift) else {
            continue;
        };
        let keeps = inner.iter().zip(swizzled.iter_mut()).all(|(&o, s)| {
            *s = swizzle.apply(o);
            usize::try_from(*s).is_ok_and(|i| present.get(i) == Some(&true))
        });
        if !keeps {
            continue;
        }
        let Ok(report) = BankReport::new(&swizzled, pattern, element_bits, banks) else {
            continue; // a vector torn apart
        };
        let rank = (bits, shift.abs(), i64::from(shift < 0), base);
        let wavefronts = report.wavefronts();
        if best
            .as_ref()
            .is_none_or(|(w, r, ..)| (wavefronts, rank) < (*w, *r))
        {
            best = Some((wavefronts, rank, swizzle, report));
        }
    }
    Ok(best
        .filter(|(w, ..)| *w < to_beat)
        .map(|(_, _, swizzle, report)| Suggestion {
            swizzle,
            memory: ComposedLayout::new(swizzle, memory.offset(), memory.layout().clone()),
            report,
        }))
}

/// How simple a swizzle is, compared in order: bits, |shift|, a negative
/// shift, base.
type SwizzleRank = (i64, i64, i64, i64);

/// Every `(B, M, S)` with `B >= 1`, `|S| >= B` and `B + M + |S| <= span`.
fn candidates(span: i64) -> impl Iterator<Item = (i64, i64, i64)> {
    (1..=span / 2).flat_map(move |bits| {
        (bits..=span - bits).flat_map(move |s| {
            (0..=span - bits - s).flat_map(move |base| [(bits, base, s), (bits, base, -s)])
        })
    })
}

/// The bank conflicts of both sides of an in-thread transpose: its loads
/// against the source layout and its stores against the destination's.
///
/// ```
/// use retile_copy::{Banks, TransposeRequest};
/// let r = TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse()?, "(256,16):(16,1)".parse()?);
/// let b = r.banks(32, Banks::default())?.unwrap();
/// assert_eq!((b.loads.element_bits, b.stores.element_bits), (16, 16));
/// assert!(b.stores.report.conflicts() > 0 && b.stores.best().conflict_free());
/// let rejected = TransposeRequest::new(256, 16, 128, "(64,32):(1,64)".parse()?, "(64,32):(32,1)".parse()?);
/// assert!(rejected.banks(32, Banks::default())?.is_none());
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanBanks {
    /// The loads, were the source in shared memory.
    pub loads: BankAnalysis,
    /// The stores, were the destination in shared memory.
    pub stores: BankAnalysis,
}

impl TransposeRequest {
    /// Plans the copy and analyses both sides' bank conflicts (warps of
    /// `warp` lanes); `None` when the in-thread transpose does not apply.
    ///
    /// ```
    /// use retile_copy::{Banks, TransposeRequest};
    /// let r = TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse()?, "(256,16):(16,1)".parse()?);
    /// let b = r.banks(32, Banks::default())?.unwrap();
    /// assert!(b.stores.report.conflicts() > 0);
    /// assert!(b.stores.best().conflict_free());
    /// # Ok::<(), retile_copy::CopyError>(())
    /// ```
    pub fn banks(&self, warp: i64, banks: Banks) -> Result<Option<PlanBanks>> {
        let TransposePlan::Applies(t) = self.plan()? else {
            return Ok(None);
        };
        let analysis = |memory: &Layout, pattern| {
            BankAnalysis::new(
                ComposedLayout::from(memory.clone()),
                pattern,
                self.element_bits,
                banks,
            )
        };
        Ok(Some(PlanBanks {
            loads: analysis(&self.src, AccessPattern::loads(&t, warp)?)?,
            stores: analysis(&self.dst, AccessPattern::stores(&t, warp)?)?,
        }))
    }
}
