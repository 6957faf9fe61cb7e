// The pod sandbox's process for the offline kind node image: nothing to download, a few lines.
module portcullis.dev/test/kind/pause

go 1.26.0
