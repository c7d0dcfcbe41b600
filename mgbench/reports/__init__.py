"""Tables, charts and the HTML report built from a run folder's results."""
