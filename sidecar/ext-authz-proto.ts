// The part of Envoy's ext_authz v3 API the decision service reads and writes, as protobuf
// definitions: the same packages, message names and field numbers as Envoy's published
// envoy/service/auth/v3/{external_auth,attribute_context}.proto, envoy/config/core/v3/base.proto,
// envoy/type/v3/http_status.proto and google/rpc/status.proto (Apache-2.0), trimmed to the fields
// used here. Protobuf skips unknown fields, so this subset reads every CheckRequest Envoy sends
// and writes CheckResponses Envoy reads; the integration tier holds it to the real contract with
// a client generated from Envoy's published API (test/harness/gateways/ext-authz-client).
// Written as text rather than vendored with its imports (validate, udpa and xds annotations, and
// the rest of base.proto's dependency tree, some thirty files) so that the bundle carries one
// small string and no .proto files need to ship beside it.
import protobuf from 'protobufjs';

const PROTO = `
syntax = "proto3";

package google.rpc;
message Status {
  int32 code = 1;
  string message = 2;
}

package envoy.config.core.v3;
message HeaderValue {
  string key = 1;
  string value = 2;
  bytes raw_value = 3;
}
message HeaderValueOption {
  enum HeaderAppendAction {
    APPEND_IF_EXISTS_OR_ADD = 0;
    ADD_IF_ABSENT = 1;
    OVERWRITE_IF_EXISTS_OR_ADD = 2;
    OVERWRITE_IF_EXISTS = 3;
  }
  HeaderValue header = 1;
  HeaderAppendAction append_action = 3;
}
message HeaderMap {
  repeated HeaderValue headers = 1;
}

package envoy.type.v3;
message HttpStatus {
  int32 code = 1;
}

package envoy.service.auth.v3;
message AttributeContext {
  message HttpRequest {
    string id = 1;
    string method = 2;
    map<string, string> headers = 3;
    string path = 4;
    string host = 5;
    envoy.config.core.v3.HeaderMap header_map = 13;
  }
  message Request {
    HttpRequest http = 2;
  }
  Request request = 4;
}
message CheckRequest {
  AttributeContext attributes = 1;
}
message DeniedHttpResponse {
  envoy.type.v3.HttpStatus status = 1;
  repeated envoy.config.core.v3.HeaderValueOption headers = 2;
  string body = 3;
}
message OkHttpResponse {
  repeated envoy.config.core.v3.HeaderValueOption headers = 2;
  repeated string headers_to_remove = 5;
  repeated envoy.config.core.v3.HeaderValueOption response_headers_to_add = 6;
}
message CheckResponse {
  google.rpc.Status status = 1;
  oneof http_response {
    DeniedHttpResponse denied_response = 2;
    OkHttpResponse ok_response = 3;
  }
}
`;

/** The fully qualified method name gRPC clients call. */
export const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

// protobufjs' parser takes one package statement per file: parse each package's part on its own.
const root = new protobuf.Root();
for (const part of PROTO.split(/\n(?=package )/).slice(1))
  protobuf.parse(`syntax = "proto3";\n${part}`, root, { keepCase: true });

export const CheckRequestType = root.lookupType('envoy.service.auth.v3.CheckRequest');
export const CheckResponseType = root.lookupType('envoy.service.auth.v3.CheckResponse');
