#pragma once
// Python's exception types under Python's names: a verifier that fails where upstream raises
// answers 500 with the same "<type>: <message>" body, e.g. "KeyError: 'x'"
// (http::exception_response names an exception by its unqualified C++ type).
#include <stdexcept>

namespace gym::python_compat {

class PyException : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class KeyError : public PyException {
 public:
  using PyException::PyException;
};
class TypeError : public PyException {
 public:
  using PyException::PyException;
};
class ValueError : public PyException {
 public:
  using PyException::PyException;
};
class AttributeError : public PyException {
 public:
  using PyException::PyException;
};
class ZeroDivisionError : public PyException {
 public:
  using PyException::PyException;
};
class OverflowError : public PyException {
 public:
  using PyException::PyException;
};
class RecursionError : public PyException {
 public:
  using PyException::PyException;
};
// json.JSONDecodeError, with Python's message ("Expecting value: line 1 column 1 (char 0)").
class JSONDecodeError : public ValueError {
 public:
  using ValueError::ValueError;
};
// re.error: the pattern does not compile.
class PyRegexError : public PyException {
 public:
  using PyException::PyException;
};

}  // namespace gym::python_compat
