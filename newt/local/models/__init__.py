"""Chat models for `newt --local`: a short catalogue, its downloads and the GGUFs already here.

Below the agent (docs/design.md section 1): it may import newt.config, newt.files,
newt.resources and newt.text, never the agent or the UI. Why a package of its
own: newt/local/setup/ fetches llama-server and SmolLM2 with the
standard library only; this side needs huggingface_hub.
"""
