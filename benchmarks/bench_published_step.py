"""Chapter 2's published-scale training step against what the device's matrix units do (issue 49):
the first thing to run on a lent GPU, before `make published`.

    .venv/bin/python benchmarks/bench_published_step.py [--device cuda] [--steps 5]
        [--batch-size 32768] [--n-layers 11] [--variants fp32 tf32 tf32_compiled] [--json F]

It measures, on one device, in one run:

* the device's matrix-product throughput: float32 products of 8,192 x 8,192 matrices with TF32
  off and on (TFLOP/s; on a CPU 2,048 x 2,048, TF32 not applying);
* the study-scale training step of `lib.paths.training.train` (11 layers, graphs of up to 15
  vertices, 2**15 fresh graphs a step, Adam at 5e-4) in each variant: `fp32` as the chapter
  trains (float32 products), `tf32` with TF32 products and float32 storage
  (`torch.backends.cuda.matmul.allow_tf32`), `tf32_compiled` the same with the model compiled
  by `torch.compile`; and, of the fp32 step, the share spent drawing the graphs (on the device);
* per variant: seconds a step, TFLOP/s by the rough count 6 x parameters x tokens a step (the
  attention's own products left out), that throughput as a share of the matching matrix-product
  throughput, and the device-minutes of chapter 2's 9,600 steps at that speed.

TF32 rounds the products' inputs to 10 bits of mantissa: a variant that changes numbers, to be
kept only after the first 300 steps' curves are checked against `results/published/ch2_first300`
(the chapter trains in float32 today). Bit-equality between variants is not expected.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.paths.training import PathTrainingConfig, start_training, train  # noqa: E402

#: Chapter 2's published run: 9,600 steps (6,400 at 5e-4, then 3,200 at 1e-4).
PUBLISHED_STEPS = 9600
VARIANTS = ("fp32", "tf32", "tf32_compiled")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def tf32(enabled: bool):
    """TF32 matrix products (CUDA only) while inside, restored after."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def matmul_tflops(device: torch.device, *, allow_tf32: bool, repeats: int = 10) -> float:
    """TFLOP/s of square float32 matrix products on `device` (8,192 on a GPU, 2,048 on a CPU)."""
    size = 8192 if device.type == "cuda" else 2048
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    with tf32(allow_tf32):
        a @ b                                       # warm-up
        synchronize(device)
        started = time.perf_counter()
        for _ in range(repeats):
            a @ b
        synchronize(device)
    return 2 * size**3 * repeats / (time.perf_counter() - started) / 1e12


def step_seconds(config: PathTrainingConfig, variant: str, steps: int) -> tuple[float, float]:
    """(seconds a step, share of it drawing graphs) of `steps` training steps of `config` in
    `variant`, after two warm-up steps (compilation included in those)."""
    device = torch.device(config.device)
    with tf32(variant != "fp32"):
        run = start_training(config)
        if variant == "tf32_compiled":
            run.model = torch.compile(run.model)
        train(run, until_step=2, progress=False)
        synchronize(device)
        sampling_before, started = run.seconds_sampling, time.perf_counter()
        train(run, until_step=2 + steps, progress=False)
        synchronize(device)
        seconds = (time.perf_counter() - started) / steps
    return seconds, (run.seconds_sampling - sampling_before) / steps / seconds


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per variant (after 2 warm-up steps)")
    parser.add_argument("--batch-size", type=int, default=2**15, help="graphs a step (the study: 2**15)")
    parser.add_argument("--n-layers", type=int, default=11, help="encoder layers (the study: 11)")
    parser.add_argument("--variants", nargs="+", default=None, choices=VARIANTS,
                        help="default: all three on CUDA, fp32 on a CPU")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.batch_size < 1 or args.n_layers < 1:
        raise SystemExit("--steps, --batch-size and --n-layers must be positive integers.")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device} asks for CUDA, which this machine does not have.")
    variants = args.variants or (list(VARIANTS) if device.type == "cuda" else ["fp32"])

    config = PathTrainingConfig(n_layers=args.n_layers, n_max=15, batch_size=args.batch_size,
                                lr_schedule=((10**9, 5e-4),), log_every=10**9, snapshot_every=10**9,
                                eval_size=16, device=str(device))
    n_parameters = start_training(dataclasses.replace(config, device="cpu")).n_parameters
    tokens = args.batch_size * (config.n_max + 1)
    flop_per_step = 6 * n_parameters * tokens
    peaks = {"fp32": matmul_tflops(device, allow_tf32=False)}
    if device.type == "cuda":
        peaks["tf32"] = matmul_tflops(device, allow_tf32=True)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"{name}: float32 products {peaks['fp32']:.3g} TFLOP/s"
          + (f", TF32 {peaks['tf32']:.3g} TFLOP/s" if "tf32" in peaks else "")
          + f"; the step: {n_parameters:,} parameters x {tokens:,} tokens, about {flop_per_step / 1e12:.3g} TFLOP",
          flush=True)
    report = {"device": name, "matmul_tflops": peaks, "n_parameters": n_parameters, "tokens_per_step": tokens,
              "flop_per_step": flop_per_step, "variants": {}}
    for variant in variants:
        seconds, sampling = step_seconds(config, variant, args.steps)
        achieved = flop_per_step / seconds / 1e12
        peak = peaks["fp32" if variant == "fp32" or device.type != "cuda" else "tf32"]
        minutes = PUBLISHED_STEPS * seconds / 60
        report["variants"][variant] = {"seconds_per_step": seconds, "sampling_share": sampling,
                                       "tflops": achieved, "share_of_matmul": achieved / peak,
                                       "minutes_for_9600_steps": minutes}
        print(f"  {variant}: {seconds:.4f} s a step ({sampling:.0%} drawing graphs), {achieved:.3g} TFLOP/s = "
              f"{achieved / peak:.1%} of the products' {peak:.3g}; 9,600 steps: {minutes:.1f} device-minutes",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
