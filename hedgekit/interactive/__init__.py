"""The maths behind the app (``streamlit run app/main.py``) and the notebooks' live widgets, one module per concern.

* `models`: which zoo models the app shows, at which preset, loaded how;
* `inputs`: an image (array, upload, drawing) and the rectangles hiding it, checked;
* `occlusion`: one occluded input under one model: embedding, eta, top-k (`analyse`);
* `maps`: the 2D map's figure data: ellipses, trail, zoom, another model's mark, `sqrt_det`;
* `view`: `model_view`, everything a map page draws of one model in one call;
* `retrieval`: the Retrieval page (Taha et al. 2019); `prototypes`: SPE on the compare page (Scott et al. 2019);
* `latency`: how long one update takes.

The class centroids the maps are drawn around live in `hedgekit.evaluation.centroids`. Nothing here imports
`hedgekit.papers`: a page's paper-specific settings (e.g. the retrieval model's dimension) are passed in.
"""
