"""The composition root: builds every object (`build`), prepares the home (`home`),
and runs the service (`serve`). The only place that knows every layer."""
