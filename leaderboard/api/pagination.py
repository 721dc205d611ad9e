from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """PAGE_SIZE rows a page by default; `page_size` asks for up to 1,000."""

    page_size_query_param = "page_size"
    max_page_size = 1000
