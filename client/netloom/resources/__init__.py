"""The methods of `netloom.Client`, one mixin per resource of the service (datasets, graphs, runs,
sweeps, the run stream, models, team, audit, exports, jobs, the user's tokens), each over the
shared HTTP session of `transport.py`. `netloom.client.Client` joins them."""
