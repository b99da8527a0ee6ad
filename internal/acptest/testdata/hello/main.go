// Command hello exits 0 at once; acptest's tests build it to exercise
// BuildPackage without depending on the daemon compiling.
package main

func main() {}
