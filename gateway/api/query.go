package api

import (
	"strconv"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/nexo-im/nexo/domain"
)

// QueryInt reads the optional integer query parameter name into *dst,
// which keeps its value when the parameter is absent or empty. A value that
// is not a base-10 integer in dst's range is a bad_request naming the
// parameter ("<name> must be an integer").
func QueryInt[T int | int64](c *app.RequestContext, name string, dst *T) error {
	v := c.Query(name)
	if v == "" {
		return nil
	}
	bits := 64
	if _, isInt := any(*dst).(int); isInt {
		bits = strconv.IntSize
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		return domain.BadField(name, "must be an integer")
	}
	*dst = T(n)
	return nil
}
