"""PGD cost relative to plain forward+backward passes of the same model on the same input.

Times ``run_attack`` (PGD, L-inf, ``--steps`` k, random start, best-iterate tracking)
against k x (forward + cross-entropy + backward) through the same Gaussian sliding
window of the built-in CT U-Net (``--model toy``: a small 3D conv net) on a random
normalized volume. Runs alternate (reference, PGD, ...) and the fastest of
``--repeats`` is kept for each, so background load affects both alike; on CPU the
ratio of process CPU times is printed too (robust to other processes' load). PGD makes
k+1 forwards and k backwards (the last iterate is evaluated once), so the ideal
ratio is about 1 + 1/(3k).

Run: ``.venv/bin/python benchmarks/bench_attacks.py [--shape 32 64 64] [--steps 10]``
GPU: ``... --device cuda --shape 128 128 128`` (also prints the absolute times).
Target: ratio <= 1.2. The last line starts with ``SUMMARY`` (read by ``scripts/gpu-check.sh``).
"""

from __future__ import annotations

import argparse
import time

TARGET_RATIO = 1.2


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=int, nargs=3, default=(32, 64, 64))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--model", choices=("builtin-ct", "toy"), default="builtin-ct")
    ap.add_argument("--gradient", choices=("whole", "chunked"), default="whole")
    ap.add_argument("--batch", type=int, default=2, help="windows per network call")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = ap.parse_args(argv)

    import torch

    from napari_segeval.attacks import AttackConfig, run_attack
    from napari_segeval.attacks.dense import _chunked_function
    from napari_segeval.attacks.losses import cross_entropy
    from napari_segeval.inference.sliding_window import sliding_window_logits, window_grid
    from napari_segeval.models.registry import load_dense

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    model = load_dense("builtin-ct", device=device)
    if args.model == "toy":
        torch.manual_seed(0)
        model.network = (
            torch.nn.Sequential(
                torch.nn.Conv3d(1, 8, 3, padding=1),
                torch.nn.ReLU(),
                torch.nn.Conv3d(8, model.num_classes, 3, padding=1),
            )
            .to(device)
            .eval()
        )
    for p in model.network.parameters():
        p.requires_grad_(False)

    class Target:  # the minimal object the chunked gradient needs
        pass

    t = Target()
    t.model, t.overlap, t.batch_size, t.mirror_axes = model, 0.5, args.batch, ()
    t._logits = lambda x: sliding_window_logits(
        model.network, x, model.patch_size, overlap=0.5, batch_size=args.batch
    )
    if args.gradient == "chunked":
        fn = _chunked_function()

        def forward(x):
            return fn.apply(x, t)
    else:
        forward = t._logits
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1, 1, *args.shape, generator=gen).to(device)
    with torch.no_grad():
        target = forward(x).argmax(1)
    k = args.steps
    cfg = AttackConfig("pgd", eps=0.05, steps=k, seed=0)

    def reference() -> None:
        for _ in range(k):
            xi = x.detach().requires_grad_(True)
            loss = cross_entropy(forward(xi), target).sum()
            torch.autograd.grad(loss, xi)

    def attack() -> None:
        run_attack(forward, x, target, cfg)

    attack()  # warm-up (allocator, kernels)
    best = {"reference": float("inf"), "pgd": float("inf")}
    cpu = {"reference": float("inf"), "pgd": float("inf")}
    for _ in range(args.repeats):
        for name, fn_ in (("reference", reference), ("pgd", attack)):
            _sync(device)
            t0, c0 = time.perf_counter(), time.process_time()
            fn_()
            _sync(device)
            best[name] = min(best[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)
    ratio = best["pgd"] / best["reference"]
    n_win = len(
        window_grid(
            [max(s, p) for s, p in zip(args.shape, model.patch_size)], model.patch_size, 0.5
        )
    )
    print(
        f"model {args.model} ({'built-in CT U-Net' if args.model == 'builtin-ct' else 'toy'}), "
        f"device {device}, volume {tuple(args.shape)}, {n_win} windows of "
        f"{tuple(model.patch_size)}, gradient {args.gradient}, k = {k}, "
        f"best of {args.repeats}, torch threads {torch.get_num_threads()}"
    )
    print(f"{'run':<34}{'seconds':>10}{'per step':>10}")
    print(
        f"{'k x (forward + backward)':<34}{best['reference']:>10.3f}{best['reference'] / k:>10.3f}"
    )
    print(f"{'PGD k steps (+1 final forward)':<34}{best['pgd']:>10.3f}{best['pgd'] / k:>10.3f}")
    if device.type == "cpu":
        print(
            f"process CPU time ratio (less sensitive to other processes' load) = "
            f"{cpu['pgd'] / cpu['reference']:.3f}"
        )
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(f"ratio PGD / (k x (fwd+bwd)) = {ratio:.3f}  (target <= {TARGET_RATIO}: {verdict})")
    print(
        f"SUMMARY attacks device={device.type} shape={'x'.join(map(str, args.shape))} "
        f"pgd_s={best['pgd']:.3f} ratio={ratio:.3f} "
        f"targets={'met' if ratio <= TARGET_RATIO else 'missed'}"
    )
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
