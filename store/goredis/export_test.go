package goredisstore

// SpareOptions is spareOptions, for the tests.
var SpareOptions = spareOptions
