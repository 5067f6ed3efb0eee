module github.com/ratekit/ratekit/grpclimit

go 1.26.0

replace github.com/ratekit/ratekit => ..

require (
	github.com/ratekit/ratekit v0.0.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260226221140-a57be14db171
	google.golang.org/grpc v1.81.1
	google.golang.org/protobuf v1.36.11
)

require (
	golang.org/x/net v0.51.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.34.0 // indirect
)
