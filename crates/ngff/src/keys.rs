//! The keys of an acquisition's arrays: paths inside its root group
//! (`cam0`, `run3/cam1`, a plate's `A/1/0`), checked, and the groups
//! between the root and the arrays that they make.

use std::collections::BTreeSet;

use retile_plan::StreamError;

/// Checks that `key` names an array inside a group: `/`-separated parts,
/// each of ASCII letters, digits, `_`, `-` and `.` (not `.` or `..` alone,
/// nor starting with `.`: names Zarr keeps for itself).
///
/// ```
/// use retile_ngff::check_key;
/// assert!(check_key("run3/cam0").is_ok());
/// assert!(check_key("cam0/").is_err());
/// assert!(check_key("../cam0").is_err());
/// ```
pub fn check_key(key: &str) -> Result<(), StreamError> {
    let bad = |why: &str| {
        Err(StreamError::Invalid(format!(
            "the array key '{key}' {why}: use parts of letters, digits, '_', '-' and '.' joined by '/' (e.g. 'cam0' or 'run3/cam1')"
        )))
    };
    if key.is_empty() {
        return bad("is empty");
    }
    for part in key.split('/') {
        if part.is_empty() {
            return bad("has an empty part (a '/' at its start or end, or '//')");
        }
        if part.starts_with('.') {
            return bad("has a part starting with '.'");
        }
        if !part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return bad("has a character other than letters, digits, '_', '-', '.' and '/'");
        }
    }
    Ok(())
}

/// The groups that `keys` make between the root and their arrays (every
/// proper prefix of each key, the root `""` excluded), in order, parents
/// first; an error if a key is given twice or names an array that another
/// key puts arrays under.
///
/// ```
/// use retile_ngff::groups_of;
/// let groups = groups_of(&["run3/cam0", "run3/cam1", "cam2"])?;
/// assert_eq!(groups, vec!["run3".to_string()]);
/// assert!(groups_of(&["run3", "run3/cam1"]).is_err());
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn groups_of(keys: &[&str]) -> Result<Vec<String>, StreamError> {
    let mut arrays = BTreeSet::new();
    let mut groups = BTreeSet::new();
    for key in keys {
        check_key(key)?;
        if !arrays.insert(*key) {
            return Err(StreamError::Invalid(format!(
                "the array key '{key}' is given twice: each array needs a key of its own"
            )));
        }
        let mut at = 0;
        while let Some(slash) = key[at..].find('/') {
            groups.insert(key[..at + slash].to_string());
            at += slash + 1;
        }
    }
    if let Some(both) = groups.iter().find(|g| arrays.contains(g.as_str())) {
        return Err(StreamError::Invalid(format!(
            "'{both}' is both an array and the group of another array's key: rename one of them"
        )));
    }
    Ok(groups.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn part() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,5}"
    }

    proptest! {
        /// Every group is a proper prefix of a key ending at a '/', every such
        /// prefix is a group, and parents come before children.
        #[test]
        fn groups_are_the_prefixes(keys in prop::collection::btree_set(prop::collection::vec(part(), 1..4).prop_map(|p| p.join("/")), 1..6)) {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            match groups_of(&keys) {
                Ok(groups) => {
                    for g in &groups {
                        let prefix = format!("{g}/");
                        prop_assert!(keys.iter().any(|k| k.starts_with(&prefix)));
                        prop_assert!(!keys.contains(&g.as_str()));
                        if let Some((parent, _)) = g.rsplit_once('/') {
                            let p = groups.iter().position(|x| x == parent);
                            let c = groups.iter().position(|x| x == g);
                            prop_assert!(p < c);
                        }
                    }
                    for k in &keys {
                        for (i, _) in k.match_indices('/') {
                            prop_assert!(groups.contains(&k[..i].to_string()));
                        }
                    }
                }
                Err(_) => {
                    // refused only when a key is also another key's group
                    let nested = keys.iter().any(|a| keys.iter().any(|b| b.starts_with(&format!("{a}/"))));
                    prop_assert!(nested);
                }
            }
        }

        /// A key with an empty part, a part starting with '.', or another
        /// character is refused; joined valid parts are taken.
        #[test]
        fn keys_are_checked(parts in prop::collection::vec(part(), 1..4), bad in "[^a-zA-Z0-9_.-]") {
            let key = parts.join("/");
            prop_assert!(check_key(&key).is_ok());
            let with_bad = format!("{key}{bad}");
            prop_assert!(check_key(&with_bad).is_err());
            for bad_key in [format!("{key}/"), format!("{key}//x"), format!(".{key}"), format!("/{key}")] {
                prop_assert!(check_key(&bad_key).is_err(), "{} was taken", bad_key);
            }
        }
    }
}
