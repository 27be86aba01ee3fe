//! An HCS plate (NGFF 0.5): rows and columns of wells, each well a group
//! of fields, each field an OME-Zarr image. The plate's `plate` metadata
//! goes in the root group, each well's `well` metadata in its group
//! (`A/1`), and field `f` of well `A/1` is the image at `A/1/f`.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{json, Value};

use retile_plan::StreamError;

use crate::metadata::NGFF_VERSION;

/// A plate as a user describes it: `retile.Stream(..., plate=dict(...))`
/// and the `plate` table of a settings file.
///
/// ```
/// use retile_ngff::Plate;
/// let plate = Plate { name: Some("screen 3".into()), rows: vec!["A".into(), "B".into()],
///     columns: vec!["1".into(), "2".into()], fields: 2, wells: Some(vec!["A/1".into(), "B/2".into()]) };
/// assert_eq!(plate.field_keys()?, ["A/1/0", "A/1/1", "B/2/0", "B/2/1"]);
/// let root = plate.plate_attributes()?;
/// assert_eq!(root["ome"]["plate"]["wells"][1]["rowIndex"], 1);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plate {
    /// The plate's name.
    pub name: Option<String>,
    /// Row names, top to bottom (letters and digits: `A`, `B`, ...).
    pub rows: Vec<String>,
    /// Column names, left to right (letters and digits: `1`, `2`, ...).
    pub columns: Vec<String>,
    /// Fields (images) per well.
    pub fields: u32,
    /// The wells imaged, as `ROW/COLUMN` (`A/1`); `None`: every row by
    /// every column.
    pub wells: Option<Vec<String>>,
}

/// A well: its path (`A/1`) and its row's and column's indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Well {
    path: String,
    row: usize,
    column: usize,
}

impl Plate {
    /// The wells, checked: unique rows and columns of letters and digits,
    /// each well in them and given once, at least one field.
    fn checked_wells(&self) -> Result<Vec<Well>, StreamError> {
        for (what, names) in [("rows", &self.rows), ("columns", &self.columns)] {
            if names.is_empty() {
                return Err(StreamError::Invalid(format!(
                    "the plate has no {what}: name at least one"
                )));
            }
            let mut seen = BTreeSet::new();
            for name in names {
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
                    return Err(StreamError::Invalid(format!(
                        "the plate's {what} name '{name}' is not letters and digits alone, as NGFF asks (e.g. 'A' or '12')"
                    )));
                }
                if !seen.insert(name) {
                    return Err(StreamError::Invalid(format!(
                        "the plate's {what} name '{name}' is given twice"
                    )));
                }
            }
        }
        if self.fields == 0 {
            return Err(StreamError::Invalid(
                "a plate's wells hold at least one field: fields=1 or more".into(),
            ));
        }
        let index = |names: &[String], name: &str| names.iter().position(|n| n == name);
        let wells = match &self.wells {
            None => self
                .rows
                .iter()
                .flat_map(|r| self.columns.iter().map(move |c| format!("{r}/{c}")))
                .collect(),
            Some(wells) => wells.clone(),
        };
        if wells.is_empty() {
            return Err(StreamError::Invalid(
                "the plate's wells list is empty: name at least one well (e.g. 'A/1'), or give wells=None for every row by every column".into(),
            ));
        }
        let mut seen = BTreeSet::new();
        wells
            .into_iter()
            .map(|path| {
                let place = path
                    .split_once('/')
                    .and_then(|(r, c)| Some((index(&self.rows, r)?, index(&self.columns, c)?)));
                let Some((row, column)) = place else {
                    return Err(StreamError::Invalid(format!(
                        "the well '{path}' is not ROW/COLUMN of the plate's rows {:?} and columns {:?}",
                        self.rows, self.columns
                    )));
                };
                if !seen.insert(path.clone()) {
                    return Err(StreamError::Invalid(format!("the well '{path}' is given twice")));
                }
                Ok(Well { path, row, column })
            })
            .collect()
    }

    /// The keys of every field's image, well by well (`A/1/0`, `A/1/1`, ...).
    ///
    /// ```
    /// use retile_ngff::Plate;
    /// // no wells named: every row by every column
    /// let plate = Plate { name: None, rows: vec!["A".into(), "B".into()],
    ///     columns: vec!["1".into(), "2".into(), "3".into()], fields: 1, wells: None };
    /// assert_eq!(plate.field_keys()?, ["A/1/0", "A/2/0", "A/3/0", "B/1/0", "B/2/0", "B/3/0"]);
    /// let odd = Plate { wells: Some(vec!["C/1".into()]), ..plate };
    /// assert!(odd.field_keys().unwrap_err().to_string().contains("'C/1'"));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn field_keys(&self) -> Result<Vec<String>, StreamError> {
        Ok(self
            .checked_wells()?
            .iter()
            .flat_map(|w| (0..self.fields).map(move |f| format!("{}/{f}", w.path)))
            .collect())
    }

    /// The root group's attributes: the NGFF `plate` metadata.
    ///
    /// ```
    /// use retile_ngff::Plate;
    /// let plate = Plate { name: None, rows: vec!["A".into(), "B".into()],
    ///     columns: vec!["1".into(), "2".into(), "3".into()], fields: 1, wells: None };
    /// let root = plate.plate_attributes()?;
    /// assert_eq!(root["ome"]["version"], "0.5");
    /// assert_eq!(root["ome"]["plate"]["columns"][2]["name"], "3");
    /// assert_eq!(root["ome"]["plate"]["wells"].as_array().unwrap().len(), 6);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn plate_attributes(&self) -> Result<Value, StreamError> {
        let wells: Vec<Value> = self
            .checked_wells()?
            .iter()
            .map(|w| json!({"path": w.path, "rowIndex": w.row, "columnIndex": w.column}))
            .collect();
        let names =
            |names: &[String]| -> Vec<Value> { names.iter().map(|n| json!({"name": n})).collect() };
        // NGFF 0.5 puts the version beside `plate`; ome-zarr-models also
        // looks for it inside (the schema allows more keys), as 0.4 had it
        let mut plate = json!({
            "version": NGFF_VERSION,
            "rows": names(&self.rows),
            "columns": names(&self.columns),
            "wells": wells,
            "field_count": self.fields,
        });
        if let Some(name) = &self.name {
            plate["name"] = json!(name);
        }
        Ok(json!({"ome": {"version": NGFF_VERSION, "plate": plate}}))
    }

    /// Each well's group (`A/1`) and its attributes: the NGFF `well`
    /// metadata naming its fields' images.
    ///
    /// ```
    /// use retile_ngff::Plate;
    /// let plate = Plate { name: None, rows: vec!["A".into()], columns: vec!["1".into(), "2".into()],
    ///     fields: 2, wells: Some(vec!["A/2".into()]) };
    /// let wells = plate.well_attributes()?;
    /// assert_eq!(wells.len(), 1);
    /// assert_eq!(wells[0].0, "A/2");
    /// assert_eq!(wells[0].1["ome"]["well"]["images"][1]["path"], "1");
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn well_attributes(&self) -> Result<Vec<(String, Value)>, StreamError> {
        let images: Vec<Value> = (0..self.fields)
            .map(|f| json!({"path": f.to_string()}))
            .collect();
        Ok(self
            .checked_wells()?
            .into_iter()
            .map(|w| {
                let attributes =
                    json!({"ome": {"version": NGFF_VERSION, "well": {"images": images}}});
                (w.path, attributes)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(prefix: &'static str) -> impl Strategy<Value = Vec<String>> {
        prop::collection::btree_set(0u32..30, 1..6)
            .prop_map(move |s| s.into_iter().map(|n| format!("{prefix}{n}")).collect())
    }

    proptest! {
        /// Every well listed is a row by a column with the right indexes,
        /// every field of every well has a key, and the well groups are the wells.
        #[test]
        fn plate_metadata_matches_its_wells(rows in names("R"), columns in names(""), fields in 1u32..4, pick in prop::collection::vec(any::<bool>(), 36)) {
            let all: Vec<String> = rows.iter().flat_map(|r| columns.iter().map(move |c| format!("{r}/{c}"))).collect();
            let chosen: Vec<String> = all.iter().zip(pick.iter().cycle()).filter(|(_, &p)| p).map(|(w, _)| w.clone()).collect();
            let plate = Plate { name: None, rows: rows.clone(), columns: columns.clone(), fields, wells: Some(chosen.clone()) };
            if chosen.is_empty() {
                prop_assert!(plate.field_keys().is_err());
                return Ok(());
            }
            let meta = plate.plate_attributes().unwrap();
            let wells = meta["ome"]["plate"]["wells"].as_array().unwrap();
            prop_assert_eq!(wells.len(), chosen.len());
            for (w, path) in wells.iter().zip(&chosen) {
                let (r, c) = path.split_once('/').unwrap();
                prop_assert_eq!(w["path"].as_str().unwrap(), path.as_str());
                prop_assert_eq!(&rows[w["rowIndex"].as_u64().unwrap() as usize], r);
                prop_assert_eq!(&columns[w["columnIndex"].as_u64().unwrap() as usize], c);
            }
            let keys = plate.field_keys().unwrap();
            prop_assert_eq!(keys.len(), chosen.len() * fields as usize);
            let groups: Vec<String> = plate.well_attributes().unwrap().into_iter().map(|(p, _)| p).collect();
            prop_assert_eq!(groups, chosen);
            let every = Plate { wells: None, ..plate };
            prop_assert_eq!(every.field_keys().unwrap().len(), all.len() * fields as usize);
        }
    }

    #[test]
    fn bad_plates_are_refused_with_the_reason() {
        let plate = |rows: &[&str], columns: &[&str], wells: Option<&[&str]>, fields| Plate {
            name: None,
            rows: rows.iter().map(|s| s.to_string()).collect(),
            columns: columns.iter().map(|s| s.to_string()).collect(),
            fields,
            wells: wells.map(|w| w.iter().map(|s| s.to_string()).collect()),
        };
        let cases = [
            (plate(&["A", "A"], &["1"], None, 1), "'A' is given twice"),
            (
                plate(&["A"], &["1"], Some(&["B/1"]), 1),
                "'B/1' is not ROW/COLUMN",
            ),
            (
                plate(&["A"], &["1"], Some(&["A/1", "A/1"]), 1),
                "'A/1' is given twice",
            ),
            (
                plate(&["A"], &["1"], Some(&["A1"]), 1),
                "'A1' is not ROW/COLUMN",
            ),
            (plate(&["A-"], &["1"], None, 1), "not letters and digits"),
            (plate(&[], &["1"], None, 1), "no rows"),
            (plate(&["A"], &["1"], None, 0), "at least one field"),
            (plate(&["A"], &["1"], Some(&[]), 1), "wells list is empty"),
        ];
        for (plate, expected) in cases {
            let message = plate.field_keys().unwrap_err().to_string();
            assert!(message.contains(expected), "{message} lacks {expected}");
        }
    }
}
