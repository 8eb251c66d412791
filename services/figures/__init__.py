"""Figure builders: pure functions from data to plotly figures, drawn by pages and HTML reports alike."""
