"""The one model store: every model of every paper is named by a spec, loaded or trained here.

One job per module:

* `hedgekit.zoo.methods`: one record per method (`register_method`; the kit's six register in
  `hedgekit.zoo.kit_methods`), read by the specs, the trainers, the command line and the app;
* `hedgekit.zoo.specs`: the spec types (``Spec(kind=..., ...)``) and the presets their recipes read;
* `hedgekit.zoo.names`: the name of each spec, e.g. ``hib-n2-d2-c1-beta0.0001-paper-s0``; a name is derived from a
  spec and never read back into one (a checkpoint records its spec whole: `hedgekit.zoo.store.recorded_spec`);
* `hedgekit.zoo.store`: checkpoint I/O, provenance and staleness, and `load_or_train`;
* `hedgekit.zoo.recipes`: which data and which trainer each spec uses;
* `hedgekit.zoo.url_runs`: the runs of the URL benchmark as models of the store, defined by the URL paper, which
  registers them (`register_url_runs`) when imported;
* `hedgekit.zoo.ledger`: the committed record (spec, seed, provenance, measures) of every trained model a claim
  uses, read and written as ``from hedgekit.zoo import ledger``; checkpoints are only a cache.

This package re-exports their public names, so ``from hedgekit.zoo import Spec, load_or_train`` is the way in.
A test that replaces a function replaces it in the module that calls it (e.g. ``hedgekit.zoo.store.train_spec``).
"""
from hedgekit.zoo.names import URL_KIND, model_name, url_run_name
from hedgekit.zoo.methods import (FAMILIES, METHODS, PLUGINS_ENV, Flag, MethodRecord, every_flag, load_plugins,
                                  method, register_method)
from hedgekit.zoo.recipes import TRAINERS, episode_metrics, eval_set, head_meta, triplet_data
from hedgekit.zoo.specs import (DATA_N_DIGITS, DATA_NAMES, DATASETS, DEFAULT_SAMPLES, INIT_VARS, LOSSES, PRESETS,
                                RECIPES, EpisodeSpec, HIBSpec, ModelSpec, PairSpec, PNSpec, PointSpec, Spec, SPESpec,
                                TripletSpec, build_config)
from hedgekit.zoo.store import (FORMAT, SHIPPED_DIR, cache_checkpoint_path, check_matches, data_source,
                                find_checkpoint, is_stale, load_checkpoint, load_or_train, prototype_head,
                                recorded_spec, refresh_metrics, save_checkpoint, shipped_names, shipped_or_fast, shipped_specs,
                                train_spec, versions, write_provenance)
from hedgekit.zoo.url_runs import (URL_FORMAT, URL_RUN_FUNCTIONS, URLSpec, find_url_run, load_or_train_url,
                                   load_url_run, register_url_runs, save_url_run, url_record, url_run_is_stale,
                                   url_run_path)
from hedgekit.zoo import kit_methods  # noqa: F401 (registers the kit's six methods)

__all__ = ["URL_KIND", "model_name", "url_run_name",
           "FAMILIES", "METHODS", "PLUGINS_ENV", "Flag", "MethodRecord", "every_flag", "load_plugins", "method",
           "register_method",
           "TRAINERS", "episode_metrics", "eval_set", "head_meta", "triplet_data",
           "DATA_N_DIGITS", "DATA_NAMES", "DATASETS", "DEFAULT_SAMPLES", "INIT_VARS", "LOSSES",
           "PRESETS", "RECIPES", "EpisodeSpec", "HIBSpec", "ModelSpec", "PairSpec", "PNSpec",
           "PointSpec", "Spec", "SPESpec", "TripletSpec", "build_config",
           "FORMAT", "SHIPPED_DIR", "cache_checkpoint_path", "check_matches", "data_source", "find_checkpoint",
           "is_stale", "load_checkpoint", "load_or_train", "prototype_head", "recorded_spec", "refresh_metrics",
           "save_checkpoint", "shipped_names", "shipped_or_fast", "shipped_specs", "train_spec", "versions", "write_provenance",
           "URL_FORMAT", "URL_RUN_FUNCTIONS", "URLSpec", "find_url_run", "load_or_train_url", "load_url_run",
           "register_url_runs", "save_url_run", "url_record", "url_run_is_stale", "url_run_path"]
