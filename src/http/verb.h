#pragma once
// Beast's request verb as the router's Method: one mapping for the server and the HTTP fuzz
// target, which must route exactly as the server does.
#include <boost/beast/http/verb.hpp>

#include "http/message.h"

namespace gym::http {

Method to_method(boost::beast::http::verb v) noexcept;  // Method::other for any other verb

}  // namespace gym::http
