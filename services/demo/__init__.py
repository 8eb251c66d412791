"""The demo workspace: a database of its own, built offline through the app's services, that shows every
page with something true to say (texts: the invented texts and their labels by construction; raters: the
scripted evaluators ConsEval and DHP study; build: the workspace; workspace: where it is kept and cached)."""
