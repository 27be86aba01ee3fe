//! A stream's output opened: nothing (measuring), a Zarr array, or an
//! OME-Zarr image whose levels are the arrays of a multiscale stream.

use retile_plan::{NullSink, StreamError, StreamSpec};
use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
use retile_store::{ClaimChain, Group, Resume, StoreRoot, ZarrOptions, ZarrSink};

use crate::metadata::{check_halved_axes, group_metadata, NgffOptions, RECORD_KEY};

/// Opens a stream writing an OME-Zarr image at `zarr.path`: the group's
/// `zarr.json`, and level `k` of `pyramid` (which halves, unless it says
/// otherwise, every dimension but the first and a channel axis) as the array `k` with `zarr`'s
/// chunks, shards and codec and the axes' names as dimension names. The
/// group is written once every level's array exists (shape 0), so it never
/// names an array that is not there; each array's shape grows with the
/// stream.
///
/// ```
/// use retile_ngff::{open_ngff, NgffOptions};
/// use retile_plan::{DType, StreamSpec};
/// use retile_pyramid::{Backend, PyramidOptions};
/// use retile_store::ZarrOptions;
/// let dir = std::env::temp_dir().join(format!("retile-ngff-doc-{}", std::process::id()));
/// let spec = StreamSpec::new(DType::U16, vec![0, 64, 64], vec![4, 16, 16])?;
/// let zarr = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
/// let mut stream = open_ngff(spec, &[0, 0], Backend::Cpu { threads: 1 }, zarr, &PyramidOptions::default(), &NgffOptions::default())?;
/// stream.append(&vec![7u8; 8 * 64 * 64 * 2])?;
/// assert_eq!(stream.finish()?.levels.len(), 3); // 64, 32, 16
/// assert!(dir.join("2/zarr.json").is_file());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn open_ngff(
    spec: StreamSpec,
    fill: &[u8],
    backend: Backend,
    zarr: ZarrOptions,
    pyramid: &PyramidOptions,
    ngff: &NgffOptions,
) -> Result<MultiscaleStream, StreamError> {
    let group = Group::create(&zarr)?;
    let opened = open_image(&group, spec, fill, backend, zarr, pyramid, ngff);
    if opened.is_err() {
        // a failed start leaves nothing that would refuse the retry
        group.root().abandon();
    }
    opened
}

/// Opens a stream writing an OME-Zarr image into `group` (made ready), as
/// [`open_ngff`] describes; what a failure made is the caller's to abandon.
fn open_image(
    group: &Group,
    spec: StreamSpec,
    fill: &[u8],
    backend: Backend,
    zarr: ZarrOptions,
    pyramid: &PyramidOptions,
    ngff: &NgffOptions,
) -> Result<MultiscaleStream, StreamError> {
    let image = Image::describe(&spec, &zarr, pyramid, ngff)?;
    MultiscaleStream::new(spec, fill, backend, &image.pyramid, |k, _| {
        Ok(Box::new(image.level_sink(group, &zarr, k)))
    })
    .and_then(|stream| image.put_group(group, &zarr).map(|()| stream))
}

/// An OME-Zarr image described: its pyramid (with the dimensions it
/// halves resolved), the group's metadata, and what chains its levels'
/// claims.
pub(crate) struct Image {
    /// The pyramid, its `downsample` given.
    pub pyramid: PyramidOptions,
    /// The group's `zarr.json` (the user's attributes aside).
    metadata: serde_json::Value,
    /// The axes' names, each level's dimension names.
    names: Vec<String>,
    /// The levels' claims, chained.
    chain: ClaimChain,
    /// Whether the first dimension is halved (a level's planes are then
    /// its parent's halved).
    halves_first: bool,
}

impl Image {
    /// The image of a stream of `spec` written with `zarr`, `pyramid` and
    /// `ngff`: every dimension but the first and a channel axis halved,
    /// unless the pyramid says otherwise.
    pub fn describe(
        spec: &StreamSpec,
        zarr: &ZarrOptions,
        pyramid: &PyramidOptions,
        ngff: &NgffOptions,
    ) -> Result<Image, StreamError> {
        let rank = spec.shape().len();
        let (axes, scale) = ngff.check(rank)?;
        if zarr.dimension_names.is_some() {
            return Err(StreamError::Invalid(
                "an OME-Zarr image names its dimensions with its axes, not with dimension names"
                    .into(),
            ));
        }
        let pyramid = PyramidOptions {
            downsample: pyramid.downsample.clone().or_else(|| {
                Some(
                    (0..rank)
                        .map(|d| d > 0 && axes[d].kind != "channel")
                        .collect(),
                )
            }),
            ..pyramid.clone()
        };
        let halve = pyramid.halved(spec)?;
        check_halved_axes(&axes, &halve)?;
        let levels = pyramid.level_specs(spec)?.len();
        let mut metadata = group_metadata(&axes, &scale, &pyramid, &halve, levels)?;
        if let Some(record) = &zarr.record {
            metadata["attributes"][RECORD_KEY] = record.clone();
        }
        let halves_first = halve.first().copied().unwrap_or(false);
        Ok(Image {
            metadata,
            names: axes.iter().map(|a| a.name.clone()).collect(),
            // a level never claims planes its parent level has not claimed
            chain: ClaimChain::new(levels, halves_first),
            halves_first,
            pyramid,
        })
    }

    /// The sink of level `k`, the array `k` in `group` (level 0 writes the
    /// user's metadata, which describes the image).
    pub fn level_sink(&self, group: &Group, zarr: &ZarrOptions, k: usize) -> ZarrSink {
        let options = ZarrOptions {
            dimension_names: Some(self.names.clone()),
            user: zarr.user.clone().filter(|_| k == 0),
            record: None,
            // level k's planes are level 0's halved k times where the first
            // dimension is halved
            resume: zarr.resume.map(|r| Resume {
                first_plane: match self.halves_first {
                    true => r.first_plane >> k,
                    false => r.first_plane,
                },
            }),
            ..zarr.clone()
        };
        let sink =
            ZarrSink::in_root(group.root(), &k.to_string(), options).chained(self.chain.level(k));
        match k {
            0 => sink.describing_image(group, self.metadata.clone()),
            _ => sink,
        }
    }

    /// The options of level `k`'s array written in slabs by the tasks of a
    /// job ([`crate::SlabJob`]): the array `k` under `zarr.path`, without
    /// the user's metadata (the job's caller writes it).
    pub fn slab_options(&self, zarr: &ZarrOptions, k: usize) -> ZarrOptions {
        ZarrOptions {
            path: zarr.path.join(k.to_string()),
            dimension_names: Some(self.names.clone()),
            user: None,
            record: None,
            ..zarr.clone()
        }
    }

    /// Writes the group's `zarr.json`, with the user's attributes: once
    /// every level's array exists.
    pub fn put_group(&self, group: &Group, zarr: &ZarrOptions) -> Result<(), StreamError> {
        let document = match &zarr.user {
            Some(user) => user.written_into(&self.metadata),
            None => self.metadata.clone(),
        };
        group.put_metadata(&document)
    }
}

/// What a stream writes: a Zarr store or nothing, with or without a
/// pyramid and OME-Zarr metadata.
///
/// ```
/// use retile_ngff::{open_output, Output};
/// use retile_plan::{DType, StreamSpec};
/// use retile_pyramid::{Backend, PyramidOptions};
/// // a pyramid measured without writing anything
/// let spec = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![1, 4, 4])?;
/// let output = Output { pyramid: Some(PyramidOptions::default()), ..Default::default() };
/// let mut stream = open_output(spec, &[0], Backend::Cpu { threads: 1 }, &output)?;
/// stream.append(&[1; 64])?;
/// assert_eq!(stream.finish()?.levels.len(), 2);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// The Zarr store; `None` = tiles are made and dropped (for measuring).
    pub zarr: Option<ZarrOptions>,
    /// The pyramid; `None` = level 0 alone.
    pub pyramid: Option<PyramidOptions>,
    /// OME-Zarr metadata. A pyramid is always written as an OME-Zarr
    /// image (`None` = default axes); without a pyramid, `Some` makes a
    /// one-level image and `None` a plain array.
    pub ngff: Option<NgffOptions>,
}

/// Opens the stream `output` describes.
///
/// ```
/// use retile_ngff::{open_output, Output};
/// use retile_plan::{DType, StreamSpec};
/// use retile_pyramid::Backend;
/// # use retile_store::ZarrOptions;
/// # let dir = std::env::temp_dir().join(format!("retile-ngff-open-output-{}", std::process::id()));
/// let zarr = ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() };
/// let spec = StreamSpec::new(DType::U8, vec![2, 4], vec![1, 4])?;
/// let mut stream = open_output(spec.clone(), &[0], Backend::Cpu { threads: 1 }, &Output { zarr: Some(zarr), ..Default::default() })?;
/// stream.append(&[5; 8])?;
/// assert_eq!(stream.finish()?.tiles, 2);
/// assert!(dir.join("zarr.json").is_file()); // a plain array
/// let no_store = Output { ngff: Some(Default::default()), ..Default::default() };
/// assert!(open_output(spec, &[0], Backend::Cpu { threads: 1 }, &no_store).is_err()); // no store
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn open_output(
    spec: StreamSpec,
    fill: &[u8],
    backend: Backend,
    output: &Output,
) -> Result<MultiscaleStream, StreamError> {
    let one_level = PyramidOptions {
        levels: Some(1),
        ..Default::default()
    };
    let pyramid = output.pyramid.as_ref().unwrap_or(&one_level);
    match (
        &output.zarr,
        output.pyramid.is_some() || output.ngff.is_some(),
    ) {
        (None, _) if output.ngff.is_some() => Err(StreamError::Invalid(
            "OME-Zarr metadata needs a store to be written to".into(),
        )),
        (None, _) => {
            MultiscaleStream::new(spec, fill, backend, pyramid, |_, _| Ok(Box::new(NullSink)))
        }
        (Some(zarr), false) => {
            MultiscaleStream::single(spec, fill, backend, Box::new(ZarrSink::new(zarr.clone())))
        }
        (Some(zarr), true) => open_ngff(
            spec,
            fill,
            backend,
            zarr.clone(),
            pyramid,
            &output.ngff.clone().unwrap_or_default(),
        ),
    }
}

/// Opens the stream `output` describes as the array (or OME-Zarr image) at
/// `key` inside `root`: one array of an acquisition. `output.zarr` gives the
/// array's codec, shards and the rest; its path is the root's. What a
/// failure made is the caller's to abandon (with the root).
pub(crate) fn open_in(
    root: &StoreRoot,
    key: &str,
    spec: StreamSpec,
    fill: &[u8],
    backend: Backend,
    output: &Output,
) -> Result<MultiscaleStream, StreamError> {
    let Some(zarr) = &output.zarr else {
        return Err(StreamError::Invalid(format!(
            "the array '{key}' of an acquisition is written to its store: it needs one"
        )));
    };
    if output.pyramid.is_none() && output.ngff.is_none() {
        let sink = ZarrSink::in_root(root, key, zarr.clone());
        return MultiscaleStream::single(spec, fill, backend, Box::new(sink));
    }
    let one_level = PyramidOptions {
        levels: Some(1),
        ..Default::default()
    };
    let group = Group::within(root, key, zarr)?;
    open_image(
        &group,
        spec,
        fill,
        backend,
        zarr.clone(),
        output.pyramid.as_ref().unwrap_or(&one_level),
        &output.ngff.clone().unwrap_or_default(),
    )
}
