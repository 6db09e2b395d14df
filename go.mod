module minfer

go 1.26.8

require (
	github.com/alecthomas/kong v1.17.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/sys v0.50.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
