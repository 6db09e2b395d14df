module github.com/minfer/minfer

go 1.26.8

require (
	github.com/alecthomas/kong v1.17.0
	github.com/x448/float16 v0.8.4
	golang.org/x/sys v0.50.0
	gonum.org/v1/gonum v0.17.0
)

require github.com/ardanlabs/jinja v1.8.0
