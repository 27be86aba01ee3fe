//! The order in which a stream's elements arrive, as a user names it
//! (`input_order=[...]`, `--input-order t,z,c,y,x`): dimension names
//! (the array's `dim_names`, or the default axes of its rank without them)
//! or stored indices, resolved into the permutation
//! `StreamSpec::with_input_order` takes.

use serde::{Deserialize, Serialize};

use retile_plan::StreamError;

use crate::metadata::default_axes;

/// One dimension of an input order: its name, or its stored index (0 =
/// slowest). A name made of digits is an index.
///
/// ```
/// use retile_ngff::DimRef;
/// let order: Vec<DimRef> = serde_json::from_str(r#"["t", 2, "y"]"#)?;
/// assert_eq!(order[1], DimRef::Index(2));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum DimRef {
    /// A stored dimension's index, slowest first.
    Index(usize),
    /// A dimension's name.
    Name(String),
}

impl From<&str> for DimRef {
    fn from(text: &str) -> DimRef {
        match text.trim().parse::<usize>() {
            Ok(index) => DimRef::Index(index),
            Err(_) => DimRef::Name(text.trim().to_owned()),
        }
    }
}

/// The stored dimension of each input dimension (slowest first) that
/// `order` names, over a stream of `rank` dimensions called `names`
/// (`None`: the default axes of the rank, `t,z,y,x` and the like). One
/// error for each way it is not a permutation: the wrong length, a name
/// not among the dimensions, an index out of range, a dimension twice.
///
/// ```
/// use retile_ngff::{resolve_input_order, DimRef};
/// let names = ["t", "c", "z", "y", "x"].map(String::from);
/// let order: Vec<DimRef> = ["t", "z", "c", "y", "x"].map(DimRef::from).to_vec();
/// assert_eq!(resolve_input_order(&order, Some(&names), 5)?, vec![0, 2, 1, 3, 4]);
/// let twice: Vec<DimRef> = ["t", "z", "z", "y", "x"].map(DimRef::from).to_vec();
/// assert!(resolve_input_order(&twice, Some(&names), 5).unwrap_err().to_string().contains("twice"));
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn resolve_input_order(
    order: &[DimRef],
    names: Option<&[String]>,
    rank: usize,
) -> Result<Vec<usize>, StreamError> {
    let invalid = |m: String| Err(StreamError::Invalid(m));
    let defaults: Vec<String>;
    let names = match names {
        Some(names) => names,
        None => {
            defaults = default_axes(rank)
                .map(|axes| axes.into_iter().map(|a| a.name).collect())
                .unwrap_or_default();
            &defaults
        }
    };
    let listed = match names.is_empty() {
        true => format!("indices 0 to {}", rank.saturating_sub(1)),
        false => format!(
            "{} (or indices 0 to {})",
            names.join(","),
            rank.saturating_sub(1)
        ),
    };
    if order.len() != rank {
        return invalid(format!(
            "input_order names {} dimensions but the array has {rank}: name each of {listed} once, slowest first",
            order.len()
        ));
    }
    let mut resolved = Vec::with_capacity(rank);
    for dim in order {
        let d = match dim {
            DimRef::Index(i) if *i < rank => *i,
            DimRef::Index(i) => {
                return invalid(format!(
                    "input_order: dimension {i} is out of range; the array's dimensions are {listed}"
                ))
            }
            DimRef::Name(name) => match names.iter().position(|n| n == name) {
                Some(d) => d,
                None => {
                    return invalid(format!(
                        "input_order: '{name}' is not a dimension of the array; its dimensions are {listed}"
                    ))
                }
            },
        };
        if resolved.contains(&d) {
            let name = names.get(d).map_or(d.to_string(), |n| format!("'{n}'"));
            return invalid(format!(
                "input_order names dimension {name} twice; name each of {listed} once, slowest first"
            ));
        }
        resolved.push(d);
    }
    Ok(resolved)
}
