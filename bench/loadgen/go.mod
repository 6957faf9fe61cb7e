module portcullis.dev/bench/loadgen

go 1.19
