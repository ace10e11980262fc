"""The lab: experiments that reproduce the papers, the explorer, plots, widgets and reports."""
