"""The names the notebooks and docs use for the app's maths, kept here; the code lives in `hedgekit.interactive`.

`hedgekit.interactive.occlusion` (`analyse`, `Analysis`), `hedgekit.interactive.maps` (`map_layers`,
`update_trail`, `MapLayers`), `hedgekit.interactive.view` (`model_view`, one call per page update),
`hedgekit.interactive.inputs` (uploads, drawings, boxes), `hedgekit.interactive.models` (the app's models) and
`hedgekit.evaluation.centroids` (`CentroidTable`, `centroid_table`). New code imports from those modules.
"""
from hedgekit.evaluation.centroids import CentroidTable, centroid_table
from hedgekit.interactive.inputs import (PolarityWarning, box_from_drag, check_boxes, decode_upload, image_from_bytes,
                                         looks_inverted)
from hedgekit.interactive.maps import MapLayers, map_layers, update_trail
from hedgekit.interactive.models import (APP_CENTROID_IMAGES, APP_MODELS, DEFAULT_MODEL, POINT_MODEL, app_spec,
                                         load_model)
from hedgekit.interactive.occlusion import Analysis, analyse, eta_floor
from hedgekit.interactive.view import ModelView, model_view

__all__ = ["Analysis", "CentroidTable", "MapLayers", "ModelView", "analyse", "eta_floor", "box_from_drag", "centroid_table",
           "map_layers", "model_view", "update_trail", "PolarityWarning", "check_boxes", "decode_upload",
           "image_from_bytes", "looks_inverted", "APP_CENTROID_IMAGES", "APP_MODELS", "DEFAULT_MODEL",
           "POINT_MODEL", "app_spec", "load_model"]
