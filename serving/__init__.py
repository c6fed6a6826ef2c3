"""Netloom's model server: registry versions behind the Open Inference Protocol v2, batched.

`serving.version` loads one version folder and answers a batch (no web framework in it),
`serving.batching` gathers single requests into batches, `serving.model` is the kserve `Model`
that joins the two (the very class a KServe InferenceService predictor runs, through
`python -m serving.standalone`), `serving.server` is the local multi-model server and
`serving.registry_link` its one Django-facing module. docs/subsystems/serving.md.
"""
