// Package layout holds no code: its test keeps the documented import order
// of docs/architecture.md ("imports only point down this list") true, in the
// spirit of go/build's deps_test.go. A package may import only packages
// listed below its own layer; a new package must be added to the list.
package layout
