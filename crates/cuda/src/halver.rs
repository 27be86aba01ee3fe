//! The GPU's halving: each level's stream
//! halves the planes of every epoch it ships, straight from its device
//! input, into a device buffer its child level copies from; only finished
//! tiles cross the bus.
//!
//! A level's [`DeviceHalver`] runs on the level's compute stream after the
//! scatter, before the epoch's input slot is released. When the first
//! dimension is halved and an epoch holds an odd number of planes, the
//! last one waits on the device (the carry) for the next epoch's first.
//! Its output alternates between two buffers: the child waits for the
//! halving's event before copying, and the next halving into a buffer waits
//! for the child's copies out of it.

use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{
    result as cu, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};
use retile_gpu::Gpu;
use retile_halving::{Halving, Method};
use retile_plan::{StreamError, StreamSpec};

use crate::error::{driver, gpu_error};
use crate::halve_kernel::{halve_source, HALVE_KERNEL};

/// One output buffer of a halver, and the events that order it.
struct Output {
    planes: CudaSlice<u8>,
    /// The halving into `planes` is done.
    halved: CudaEvent,
    /// The child has copied out of `planes`.
    consumed: CudaEvent,
}

/// Child planes ready in a halver's output buffer.
pub(crate) struct Ready {
    buffer: usize,
    bytes: u64,
}

/// Makes the next level's planes from each shipped epoch of a level, on
/// the GPU, byte-identical to the CPU's halving.
pub(crate) struct DeviceHalver {
    /// The compiled kernel and its grid's most blocks.
    kernel: (CudaFunction, u64),
    /// The first dimension is halved: planes pair up, across epochs too.
    pairs: bool,
    parent_plane: u64,
    child_plane: u64,
    element: u64,
    carry: Option<CudaSlice<u8>>,
    carrying: bool,
    outputs: [Output; 2],
    next: usize,
    ready: Vec<Ready>,
}

impl DeviceHalver {
    /// A halver of `parent`'s planes with `method` along `halve` (every
    /// dimension, the first included), its buffers made on `stream`.
    pub(crate) fn new(
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        method: Method,
        parent: &StreamSpec,
        halve: &[bool],
    ) -> Result<DeviceHalver, StreamError> {
        let halving = Halving::new(&parent.shape()[1..], &halve[1..]);
        let source = halve_source(method, parent.dtype(), &halving);
        let function = gpu.kernel(HALVE_KERNEL, &source).map_err(gpu_error)?;
        let most_blocks = gpu.multiprocessors().map_err(gpu_error)? as u64 * 16;
        let element = parent.dtype().size() as u64;
        let parent_plane = halving.parent_elements() as u64 * element;
        let child_plane = halving.child_elements() as u64 * element;
        let epoch = parent.tile()[0];
        let pairs = halve[0];
        let most = if pairs { epoch / 2 + 1 } else { epoch };
        let ctx = gpu.context();
        let output = || -> Result<Output, StreamError> {
            let event = || ctx.new_event(None).map_err(driver("creating a CUDA event"));
            Ok(Output {
                // SAFETY: written by the kernel before the child reads it.
                planes: unsafe { stream.alloc::<u8>((most * child_plane).max(1) as usize) }
                    .map_err(driver("allocating a pyramid level's planes"))?,
                halved: event()?,
                consumed: event()?,
            })
        };
        let carry = match pairs {
            // SAFETY: written by a copy before the kernel reads it.
            true => Some(
                unsafe { stream.alloc::<u8>(parent_plane.max(1) as usize) }
                    .map_err(driver("allocating a pyramid carry plane"))?,
            ),
            false => None,
        };
        Ok(DeviceHalver {
            kernel: (function, most_blocks),
            pairs,
            parent_plane,
            child_plane,
            element,
            carry,
            carrying: false,
            outputs: [output()?, output()?],
            next: 0,
            ready: Vec::new(),
        })
    }

    /// Halves the `planes` planes at device address `input` on `stream`
    /// (after the scatter, before the input is released).
    pub(crate) fn halve_epoch(
        &mut self,
        stream: &Arc<CudaStream>,
        input: CUdeviceptr,
        planes: u64,
    ) -> Result<(), StreamError> {
        let b = self.begin(stream)?;
        let out = {
            let (ptr, _guard) = self.outputs[b].planes.device_ptr(stream);
            ptr
        };
        let mut made = 0;
        if !self.pairs {
            self.launch(stream, [input, 0], self.parent_plane, out, planes)?;
            made = planes;
        } else {
            let mut first = 0;
            if self.carrying && planes > 0 {
                let carry = self.carry_ptr(stream)?;
                self.launch(stream, [carry, input], 0, out, 1)?;
                (first, made, self.carrying) = (1, 1, false);
            }
            let pairs = (planes - first) / 2;
            if pairs > 0 {
                let a = input + first * self.parent_plane;
                let to = out + made * self.child_plane;
                self.launch(
                    stream,
                    [a, a + self.parent_plane],
                    2 * self.parent_plane,
                    to,
                    pairs,
                )?;
                made += pairs;
            }
            if (planes - first) % 2 == 1 {
                let carry = self.carry_ptr(stream)?;
                let last = input + (planes - 1) * self.parent_plane;
                // SAFETY: both ranges are one parent plane inside their buffers.
                unsafe {
                    cu::memcpy_dtod_async(
                        carry,
                        last,
                        self.parent_plane as usize,
                        stream.cu_stream(),
                    )
                }
                .map_err(driver("keeping a plane for the next epoch's pair"))?;
                self.carrying = true;
            }
        }
        self.end(stream, b, made)
    }

    /// At the end of the stream: a plane still waiting for its pair becomes
    /// the last child plane alone.
    pub(crate) fn flush(&mut self, stream: &Arc<CudaStream>) -> Result<(), StreamError> {
        if !self.carrying {
            return Ok(());
        }
        self.carrying = false;
        let b = self.begin(stream)?;
        let (out, _guard) = self.outputs[b].planes.device_ptr(stream);
        let carry = self.carry_ptr(stream)?;
        self.launch(stream, [carry, 0], 0, out, 1)?;
        drop(_guard);
        self.end(stream, b, 1)
    }

    /// The oldest child planes not yet taken: the device address, their
    /// bytes, the event to wait for before reading them and the one to
    /// record once they are copied.
    pub(crate) fn take_ready(
        &mut self,
        stream: &Arc<CudaStream>,
    ) -> Option<(CUdeviceptr, u64, &CudaEvent, &CudaEvent)> {
        if self.ready.is_empty() {
            return None;
        }
        let Ready { buffer, bytes } = self.ready.remove(0);
        let output = &self.outputs[buffer];
        let (ptr, _guard) = output.planes.device_ptr(stream);
        Some((ptr, bytes, &output.halved, &output.consumed))
    }

    /// The next output buffer, once its last contents were copied out.
    fn begin(&mut self, stream: &Arc<CudaStream>) -> Result<usize, StreamError> {
        let b = self.next;
        self.next = 1 - b;
        if self.ready.iter().any(|r| r.buffer == b) {
            return Err(StreamError::gpu(
                "a pyramid level's planes were overwritten before its child took them",
            ));
        }
        stream
            .wait(&self.outputs[b].consumed)
            .map_err(driver("ordering a halving after its child's copy"))?;
        Ok(b)
    }

    fn end(
        &mut self,
        stream: &Arc<CudaStream>,
        buffer: usize,
        planes: u64,
    ) -> Result<(), StreamError> {
        self.outputs[buffer]
            .halved
            .record(stream)
            .map_err(driver("recording an event"))?;
        if planes > 0 {
            self.ready.push(Ready {
                buffer,
                bytes: planes * self.child_plane,
            });
        }
        Ok(())
    }

    fn carry_ptr(&self, stream: &Arc<CudaStream>) -> Result<CUdeviceptr, StreamError> {
        let carry = self
            .carry
            .as_ref()
            .ok_or_else(|| StreamError::gpu("a pyramid level has no carry plane"))?;
        let (ptr, _guard) = carry.device_ptr(stream);
        Ok(ptr)
    }

    /// Makes `groups` child planes at `out`: group `g` reads the plane at
    /// `planes[0] + g * stride` and, unless `planes[1]` is 0, the one at
    /// `planes[1] + g * stride` (`stride` in bytes).
    fn launch(
        &self,
        stream: &Arc<CudaStream>,
        planes: [CUdeviceptr; 2],
        stride: u64,
        out: CUdeviceptr,
        groups: u64,
    ) -> Result<(), StreamError> {
        let count = groups * self.child_plane / self.element;
        if count == 0 {
            return Ok(());
        }
        let (f, most_blocks) = &self.kernel;
        let blocks = count.div_ceil(256).clamp(1, *most_blocks) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let stride_elements = stride / self.element;
        let mut launch = stream.launch_builder(f);
        launch
            .arg(&planes[0])
            .arg(&planes[1])
            .arg(&stride_elements)
            .arg(&out)
            .arg(&count);
        // SAFETY: the arguments match `retile_halve`'s signature; the caller's
        // planes and `out` hold `groups` groups and child planes.
        unsafe { launch.launch(cfg) }.map_err(driver("launching the halving kernel"))?;
        Ok(())
    }
}
