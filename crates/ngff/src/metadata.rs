//! OME-Zarr (NGFF 0.5) output: a Zarr v3 group whose `zarr.json` carries
//! `attributes.ome` (the axes and every level's scale), with one array per
//! pyramid level (`0`, `1`, ...) under it: the metadata, its axes and
//! their checks.

use serde_json::{json, Value};

use retile_halving::Method;
use retile_plan::StreamError;
use retile_pyramid::PyramidOptions;

/// The attribute retile keeps its record of an array in (see
/// `ArrayOptions::record`): the `retile` key of the user's attributes is
/// reserved for it.
pub(crate) const RECORD_KEY: &str = "retile";

/// The NGFF version written.
///
/// ```
/// use retile_ngff::{open_output, Output, NGFF_VERSION};
/// use retile_plan::{DType, StreamSpec};
/// use retile_pyramid::Backend;
/// # use retile_store::ZarrOptions;
/// # let dir = std::env::temp_dir().join(format!("retile-ngff-version-{}", std::process::id()));
/// let zarr = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
/// let output = Output { zarr: Some(zarr), ngff: Some(Default::default()), ..Default::default() };
/// let spec = StreamSpec::new(DType::U8, vec![0, 4, 4], vec![1, 4, 4])?;
/// open_output(spec, &[0], Backend::Cpu { threads: 1 }, &output)?.finish()?;
/// let text = std::fs::read_to_string(dir.join("zarr.json")).unwrap();
/// let group: serde_json::Value = serde_json::from_str(&text).unwrap();
/// assert_eq!(NGFF_VERSION, "0.5");
/// assert_eq!(group["attributes"]["ome"]["version"], NGFF_VERSION);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub const NGFF_VERSION: &str = "0.5";

/// Units NGFF names for space axes.
const SPACE_UNITS: [&str; 26] = [
    "angstrom",
    "attometer",
    "centimeter",
    "decimeter",
    "exameter",
    "femtometer",
    "foot",
    "gigameter",
    "hectometer",
    "inch",
    "kilometer",
    "megameter",
    "meter",
    "micrometer",
    "mile",
    "millimeter",
    "nanometer",
    "parsec",
    "petameter",
    "picometer",
    "terameter",
    "yard",
    "yoctometer",
    "yottameter",
    "zeptometer",
    "zettameter",
];

/// Units NGFF names for time axes.
const TIME_UNITS: [&str; 23] = [
    "attosecond",
    "centisecond",
    "day",
    "decisecond",
    "exasecond",
    "femtosecond",
    "gigasecond",
    "hectosecond",
    "hour",
    "kilosecond",
    "megasecond",
    "microsecond",
    "millisecond",
    "minute",
    "nanosecond",
    "petasecond",
    "picosecond",
    "second",
    "terasecond",
    "yoctosecond",
    "yottasecond",
    "zeptosecond",
    "zettasecond",
];

/// One axis of an OME-Zarr image.
///
/// ```
/// let t = retile_ngff::Axis::new("t", "time", Some("second"));
/// assert_eq!(t.kind, "time");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The axis name (also the array's dimension name).
    pub name: String,
    /// `time`, `channel` or `space`.
    pub kind: String,
    /// The unit (`second`, `micrometer`, ...), if any.
    pub unit: Option<String>,
}

impl Axis {
    /// An axis named `name` of type `kind`, in `unit`.
    ///
    /// ```
    /// use retile_ngff::{Axis, NgffOptions};
    /// let z = Axis::new("z", "space", Some("micrometer"));
    /// assert_eq!((z.name.as_str(), z.unit.as_deref()), ("z", Some("micrometer")));
    /// // a unit NGFF does not name is refused when the axes are checked
    /// let axes = vec![Axis::new("y", "space", Some("furlong")), Axis::new("x", "space", None)];
    /// assert!(NgffOptions { axes: Some(axes), scale: None }.check(2).is_err());
    /// ```
    pub fn new(name: &str, kind: &str, unit: Option<&str>) -> Axis {
        Axis {
            name: name.into(),
            kind: kind.into(),
            unit: unit.map(Into::into),
        }
    }
}

/// The axes of an image of `rank` dimensions when none are given: `y,x`;
/// `t,y,x`; `t,z,y,x`; `t,c,z,y,x`, without units.
///
/// ```
/// let axes = retile_ngff::default_axes(3)?;
/// assert_eq!(axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["t", "y", "x"]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn default_axes(rank: usize) -> Result<Vec<Axis>, StreamError> {
    let names: &[(&str, &str)] = match rank {
        2 => &[("y", "space"), ("x", "space")],
        3 => &[("t", "time"), ("y", "space"), ("x", "space")],
        4 => &[
            ("t", "time"),
            ("z", "space"),
            ("y", "space"),
            ("x", "space"),
        ],
        5 => &[
            ("t", "time"),
            ("c", "channel"),
            ("z", "space"),
            ("y", "space"),
            ("x", "space"),
        ],
        _ => return Err(rank_error(rank)),
    };
    Ok(names.iter().map(|(n, k)| Axis::new(n, k, None)).collect())
}

fn rank_error(rank: usize) -> StreamError {
    StreamError::Invalid(format!(
        "an OME-Zarr image has 2 to 5 dimensions, not {rank}"
    ))
}

/// What the OME-Zarr group says besides the pyramid.
///
/// ```
/// use retile_ngff::{Axis, NgffOptions};
/// let ngff = NgffOptions { axes: Some(vec![Axis::new("y", "space", Some("micrometer")), Axis::new("x", "space", Some("micrometer"))]), scale: Some(vec![0.5, 0.5]) };
/// assert!(ngff.check(2).is_ok());
/// assert!(ngff.check(3).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NgffOptions {
    /// The axes, slowest first; `None` = [`default_axes`].
    pub axes: Option<Vec<Axis>>,
    /// The physical size of one element of level 0 along each axis;
    /// `None` = 1 everywhere.
    pub scale: Option<Vec<f64>>,
}

impl NgffOptions {
    /// The axes for an image of `rank` dimensions, checked against NGFF's
    /// rules: 2 to 5 axes with distinct names, 2 or 3 of type `space`
    /// (last), at most one `time` (first) and one `channel`, NGFF's units.
    ///
    /// ```
    /// use retile_ngff::NgffOptions;
    /// // no axes given: the default ones, each of scale 1
    /// let (axes, scale) = NgffOptions::default().check(4)?;
    /// assert_eq!(axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["t", "z", "y", "x"]);
    /// assert_eq!(scale, [1.0; 4]);
    /// let bad = NgffOptions { axes: None, scale: Some(vec![1.0, -2.0]) };
    /// assert!(bad.check(2).unwrap_err().to_string().contains("positive number"));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn check(&self, rank: usize) -> Result<(Vec<Axis>, Vec<f64>), StreamError> {
        let axes = match &self.axes {
            Some(axes) => axes.clone(),
            None => default_axes(rank)?,
        };
        let invalid = |m: String| Err(StreamError::Invalid(m));
        if !(2..=5).contains(&rank) {
            return Err(rank_error(rank));
        }
        if axes.len() != rank {
            return invalid(format!("{} axes for {rank} dimensions", axes.len()));
        }
        let scale = self.scale.clone().unwrap_or_else(|| vec![1.0; rank]);
        if scale.len() != rank {
            return invalid(format!("{} scales for {rank} dimensions", scale.len()));
        }
        if let Some(s) = scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return invalid(format!("a scale must be a positive number, not {s}"));
        }
        check_axes(&axes)?;
        Ok((axes, scale))
    }
}

fn check_axes(axes: &[Axis]) -> Result<(), StreamError> {
    let invalid = |m: String| Err(StreamError::Invalid(m));
    for (i, a) in axes.iter().enumerate() {
        if a.name.is_empty() || axes[..i].iter().any(|b| b.name == a.name) {
            return invalid(format!(
                "axis names must be distinct and not empty ('{}')",
                a.name
            ));
        }
        let units: &[&str] = match a.kind.as_str() {
            "space" => &SPACE_UNITS,
            "time" => &TIME_UNITS,
            "channel" => &[],
            other => {
                return invalid(format!(
                    "axis '{}' has type '{other}'; use time, channel or space",
                    a.name
                ))
            }
        };
        if let Some(unit) = &a.unit {
            if !units.contains(&unit.as_str()) {
                return invalid(format!(
                    "axis '{}' of type {} cannot have unit '{unit}'{}",
                    a.name,
                    a.kind,
                    match units.is_empty() {
                        true => String::new(),
                        false => format!("; use one of {}", units.join(", ")),
                    }
                ));
            }
        }
    }
    let kinds: Vec<&str> = axes.iter().map(|a| a.kind.as_str()).collect();
    let count = |k: &str| kinds.iter().filter(|&&x| x == k).count();
    let spaces = count("space");
    if !(2..=3).contains(&spaces) {
        return invalid(format!(
            "an OME-Zarr image has 2 or 3 space axes, not {spaces}"
        ));
    }
    if count("time") > 1 || count("channel") > 1 {
        return invalid("an OME-Zarr image has at most one time and one channel axis".into());
    }
    if kinds[kinds.len() - spaces..].iter().any(|&k| k != "space") {
        return invalid("the space axes must come last".into());
    }
    if kinds
        .iter()
        .position(|&k| k == "time")
        .is_some_and(|p| p != 0)
    {
        return invalid("the time axis must come first".into());
    }
    Ok(())
}

/// Refuses a pyramid that halves a channel axis: its levels would average
/// (or pick between) channels, which are not neighbours in space.
pub(crate) fn check_halved_axes(axes: &[Axis], halve: &[bool]) -> Result<(), StreamError> {
    match axes.iter().zip(halve).find(|(a, &h)| h && a.kind == "channel") {
        Some((a, _)) => Err(StreamError::Invalid(format!(
            "the downsampling halves axis '{}', a channel axis: its levels would mix channels together; leave it out of the downsampling (halve only space and time axes)",
            a.name
        ))),
        None => Ok(()),
    }
}

/// Level `k`'s `scale` and `translation` along each axis: `scale` times
/// `2^k` along every halved dimension, shifted by half the parent's cells
/// (where a block's centre lies); refused where a number is not finite,
/// which JSON cannot hold.
fn level_transforms(
    axes: &[Axis],
    scale: &[f64],
    halve: &[bool],
    k: usize,
) -> Result<(Vec<f64>, Vec<f64>), StreamError> {
    let factor = |d: usize| if halve[d] { (1u64 << k) as f64 } else { 1.0 };
    let level_scale: Vec<f64> = (0..scale.len()).map(|d| scale[d] * factor(d)).collect();
    let shift: Vec<f64> = (0..scale.len())
        .map(|d| scale[d] * (factor(d) - 1.0) / 2.0)
        .collect();
    let too_large =
        (0..scale.len()).find(|&d| !(level_scale[d].is_finite() && shift[d].is_finite()));
    match too_large {
        Some(d) => Err(StreamError::Invalid(format!(
            "the scale {:e} of axis '{}' is too large: level {k} would scale it by {}, past the largest number JSON holds (about 1.8e308); give a smaller scale or fewer levels",
            scale[d],
            axes[d].name,
            factor(d)
        ))),
        None => Ok((level_scale, shift)),
    }
}

/// The group's `zarr.json`: `attributes.ome` with one multiscale whose
/// datasets are the levels `0..levels`, each scaled by 2 along every
/// dimension it halves (and, for block reductions, shifted by half its
/// parent's cells, where the block's centre lies); refused where a level's
/// scale or translation would not be a finite number.
pub(crate) fn group_metadata(
    axes: &[Axis],
    scale: &[f64],
    pyramid: &PyramidOptions,
    halve: &[bool],
    levels: usize,
) -> Result<Value, StreamError> {
    let axes_json: Vec<Value> = axes
        .iter()
        .map(|a| match &a.unit {
            Some(unit) => json!({"name": a.name, "type": a.kind, "unit": unit}),
            None => json!({"name": a.name, "type": a.kind}),
        })
        .collect();
    let datasets = (0..levels)
        .map(|k| {
            let (level_scale, shift) = level_transforms(axes, scale, halve, k)?;
            let mut transforms = vec![json!({"type": "scale", "scale": level_scale})];
            if k > 0 && pyramid.method != Method::Decimate {
                transforms.push(json!({"type": "translation", "translation": shift}));
            }
            Ok(json!({"path": k.to_string(), "coordinateTransformations": transforms}))
        })
        .collect::<Result<Vec<Value>, StreamError>>()?;
    Ok(json!({
        "zarr_format": 3,
        "node_type": "group",
        "attributes": {
            "ome": {
                "version": NGFF_VERSION,
                "multiscales": [{
                    "name": "retile",
                    "axes": axes_json,
                    "datasets": datasets,
                    "type": pyramid.method.to_string(),
                    "metadata": {
                        "description": format!("each level halves its parent along {} with {}", halved_names(halve), pyramid.method),
                        "method": format!("retile_stream::Method::{:?}", pyramid.method),
                        "version": env!("CARGO_PKG_VERSION"),
                    },
                }],
            },
        },
    }))
}

fn halved_names(halve: &[bool]) -> String {
    let dims: Vec<String> = (0..halve.len())
        .filter(|&d| halve[d])
        .map(|d| format!("dimension {d}"))
        .collect();
    match dims.is_empty() {
        true => "no dimension".into(),
        false => dims.join(", "),
    }
}
