"""Reports over the logs of a job: model (merge), text, JSON, HTML."""
