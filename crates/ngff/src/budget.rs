//! One memory budget for every array of an acquisition: each array's tile
//! buffers (its epochs, and a pyramid's halving) counted against it, in
//! the order the arrays are given, and an array the budget has no room
//! left for refused before anything is made.

use retile_plan::StreamError;

/// What each array's buffers take, and the budget they are held to.
///
/// ```
/// use retile_ngff::Budget;
/// let budget = Budget::split(Some(1000), vec![("cam0".into(), 600), ("cam1".into(), 400)])?;
/// assert_eq!(budget.total(), 1000);
/// let refused = Budget::split(Some(999), vec![("cam0".into(), 600), ("cam1".into(), 400)]);
/// assert!(refused.unwrap_err().to_string().contains("'cam1' needs 400 bytes"));
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// The bytes every array's buffers may take together (`None`: as many
    /// as their own settings ask).
    pub limit: Option<u64>,
    /// Each array's key and the bytes its buffers take, in order.
    pub arrays: Vec<(String, u64)>,
}

impl Budget {
    /// Holds the arrays' `needs` (key, bytes), in order, to `limit`: the
    /// first array that finds too little left is refused, naming what it
    /// needs, what is left and what the arrays before it took.
    ///
    /// ```
    /// use retile_ngff::Budget;
    /// let needs = vec![("a".to_string(), 300), ("b".to_string(), 500)];
    /// assert_eq!(Budget::split(None, needs.clone())?.arrays, needs); // no limit
    /// let err = Budget::split(Some(700), needs).unwrap_err().to_string();
    /// assert!(err.contains("only 400 of"), "{err}");
    /// assert!(err.contains("the arrays before it take 300"), "{err}");
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn split(limit: Option<u64>, needs: Vec<(String, u64)>) -> Result<Budget, StreamError> {
        let mut taken: u64 = 0;
        for (key, need) in &needs {
            let after = taken.checked_add(*need);
            match (limit, after) {
                (Some(limit), Some(after)) if after <= limit => taken = after,
                (None, Some(after)) => taken = after,
                (limit, _) => {
                    let limit_text = limit.map_or("2^64".to_string(), |l| l.to_string());
                    let left = limit.unwrap_or(u64::MAX).saturating_sub(taken);
                    return Err(StreamError::Invalid(format!(
                        "the array '{key}' needs {need} bytes of tile buffers but only {left} of the acquisition's memory budget of {limit_text} bytes are left (the arrays before it take {taken}): raise memory, or give '{key}' smaller tiles or fewer pyramid levels"
                    )));
                }
            }
        }
        Ok(Budget {
            limit,
            arrays: needs,
        })
    }

    /// The bytes every array's buffers take together.
    ///
    /// ```
    /// use retile_ngff::Budget;
    /// let budget = Budget::split(Some(1 << 20), vec![("a".into(), 1000), ("b".into(), 24)])?;
    /// assert_eq!(budget.total(), 1024);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn total(&self) -> u64 {
        self.arrays.iter().map(|(_, n)| n).sum()
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let limit = match self.limit {
            Some(limit) => format!("a budget of {limit} bytes"),
            None => "no budget given".to_string(),
        };
        writeln!(
            f,
            "memory: {} bytes of tile buffers for {} arrays ({limit})",
            self.total(),
            self.arrays.len()
        )?;
        for (key, bytes) in &self.arrays {
            writeln!(f, "  {key}: {bytes} bytes")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Within the limit every array gets what it needs and the total
        /// stays inside the budget; past it, the first array whose need
        /// overflows the prefix is the one named.
        #[test]
        fn the_first_array_past_the_budget_is_refused(
            needs in prop::collection::vec(0u64..1_000_000, 1..8),
            limit in prop::option::of(0u64..4_000_000),
        ) {
            let named: Vec<(String, u64)> = needs.iter().enumerate().map(|(i, &n)| (format!("a{i}"), n)).collect();
            let first_over = limit.and_then(|l| {
                let mut sum = 0;
                needs.iter().position(|&n| { sum += n; sum > l })
            });
            match (Budget::split(limit, named.clone()), first_over) {
                (Ok(budget), None) => {
                    prop_assert_eq!(&budget.arrays, &named);
                    prop_assert_eq!(budget.total(), needs.iter().sum::<u64>());
                    prop_assert!(limit.is_none_or(|l| budget.total() <= l));
                }
                (Err(e), Some(i)) => {
                    let message = e.to_string();
                    let expected = format!("'a{i}' needs {} bytes", needs[i]);
                    prop_assert!(message.contains(&expected), "{}", message);
                }
                (got, want) => prop_assert!(false, "{:?} vs first over {:?}", got, want),
            }
        }
    }
}
